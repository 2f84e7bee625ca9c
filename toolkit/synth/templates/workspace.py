"""Templates for the other domain servers: shop, finance, weather, calendar, email, chat, files, and
the calculator as an optional helper step."""

from __future__ import annotations

from toolkit.synth.base import Answer, Draft, Step, payload
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import (
    chain,
    change,
    count,
    field_of,
    find,
    fmt_num,
    items,
    listing,
    lookup,
    one_of,
    read,
    total,
    unique_by,
    write,
)

# -- shop -------------------------------------------------------------------------------------------


@template("shop_orders_by_status", "aggregate", ["shop"])
def orders_by_status(ctx: Ctx) -> Draft:
    ctx.need("list_orders")
    status = ctx.choose(sorted({o["status"] for o in ctx.records("orders")}))
    n = len(ctx.records("orders", lambda o: o["status"] == status))
    prompt = ctx.say(
        [
            "How many orders are {s}?",
            "Count the shop orders with status {s}.",
            "What's the number of {s} orders right now?",
        ],
        ["Tell me how many of our orders currently show as {s}."],
        s=status,
    )
    return count(
        prompt, listing("list_orders", {"status": status}, f"list {status} orders"), n, f"{status} orders"
    )


@template("shop_customer_spend", "aggregate", ["crm", "shop"], calls=(2, 2))
def customer_spend(ctx: Ctx) -> Draft:
    ctx.need("search_contacts", "list_orders")
    buyers = {o["customer_id"] for o in ctx.records("orders")}
    cust = ctx.choose([c for c in unique_by(ctx, "customers", "name") if c["id"] in buyers])
    orders = ctx.records("orders", lambda o: o["customer_id"] == cust["id"])
    mode = ctx.choose(("sum", "average"))

    def calc(rows: list[dict]) -> float:
        vals = [o["total"] for o in rows if o["status"] not in ("cancelled", "refunded")]
        if not vals:
            raise Skip("nothing spent")
        return round(sum(vals) if mode == "sum" else sum(vals) / len(vals), 2)

    value = calc(orders)
    words = "in total" if mode == "sum" else "per order on average"
    prompt = ctx.say(
        [
            "How much has {n} spent {w}, not counting cancelled or refunded orders?",
            "Ignoring cancelled and refunded orders, what did {n} spend {w}?",
        ],
        ["Work out {n}'s spend {w} (exclude cancelled/refunded orders)."],
        n=cust["name"],
        w=words,
    )
    steps = chain(
        find("search_contacts", cust["name"], "customer id"),
        listing("list_orders", {"customer_id": cust["id"]}, f"list {cust['name']}'s orders"),
    )
    return read(
        prompt,
        steps,
        [Answer("amount", value, "number", 0.5, text=f"{cust['name']} spent {fmt_num(value)} USD {words}")],
        f"{cust['name']} spent {fmt_num(value)} USD {words} (cancelled and refunded orders excluded).",
        lambda r: {"amount": calc(items(r[1]))},
        keep=[cust["name"]],
    )


@template("shop_update_stock", "write", ["shop"], calls=(2, 2))
def update_stock(ctx: Ctx) -> Draft:
    ctx.need("search_products", "update_stock")
    prod = ctx.choose([p for p in unique_by(ctx, "products", "name") if p["stock"] is not None])
    stock = one_of(ctx, [0, 5, 12, 25, 40, 60, 100], avoid=prod["stock"])
    prompt = ctx.say(
        [
            "Set the stock level of the {p} to {n} units.",
            "We counted {n} units of {p} in the warehouse; update the stock.",
            "Update inventory: {p} now has {n} in stock.",
        ],
        ["Correct the {p} stock figure to {n}."],
        p=prod["name"],
        n=stock,
    )
    rule = f"Product {prod['id']} ({prod['name']}) must have stock {stock} afterwards."
    return write(
        prompt,
        chain(
            find("search_products", prod["name"], "product id", norm="text"),
            Step("update_stock", {"product_id": prod["id"], "stock": stock}, purpose="set the stock"),
        ),
        [change(rule, "products", prod["id"], "stock", stock)],
        f"{prod['name']} ({prod['id']}) now has {stock} units in stock.",
        keep=[prod["name"], str(stock)],
    )


# -- finance ----------------------------------------------------------------------------------------


@template("fin_quote", "lookup", ["finance"], calls=(1, 2))
def quote(ctx: Ctx) -> Draft:
    ctx.need("get_stock_quote", "search_symbols")
    q = ctx.choose(ctx.records("quotes"))
    close = q["history"][-1]["close"]
    by_name = ctx.rng.random() < 0.5 and not ctx.max_calls < 2
    intro = q["name"] if by_name else q["symbol"]
    prompt = ctx.say(
        [
            "What was the latest closing price of {x}?",
            "Give me the last close for {x} stock.",
            "What did {x} close at most recently?",
        ],
        ["Look up {x}'s most recent closing share price."],
        x=intro,
    )
    find_symbol = find(
        "search_symbols", q["name"], "symbol", norm="text", purpose=f"find the ticker of {q['name']}"
    )
    get_quote = Step("get_stock_quote", {"symbol": q["symbol"]}, purpose=f"get the quote for {q['symbol']}")
    return lookup(
        prompt,
        chain(find_symbol, get_quote) if by_name else [get_quote],
        "close",
        close,
        f"{q['symbol']} last closed at {close} USD",
        f"{q['name']} ({q['symbol']}) last closed at {close} USD.",
        "number",
        0.01,
        keep=[intro],
    )


@template("fin_holding", "lookup", ["finance"])
def holding(ctx: Ctx) -> Draft:
    ctx.need("list_holdings")
    h = ctx.choose(ctx.records("holdings"))
    prompt = ctx.say(
        ["How many shares of {s} do we hold?", "What's our position size in {s} (number of shares)?"],
        ["Check the portfolio: how many {s} shares are in it?"],
        s=h["symbol"],
    )

    def recompute(r):
        data = payload(r[0])
        return {"shares": next(x["shares"] for x in data["holdings"] if x["symbol"] == h["symbol"])}

    return read(
        prompt,
        Step("list_holdings", {}, purpose="list the portfolio holdings"),
        [Answer("shares", h["shares"], "number", text=f"we hold {h['shares']} shares of {h['symbol']}")],
        f"We hold {h['shares']} shares of {h['symbol']}.",
        recompute,
        keep=[h["symbol"]],
    )


@template("fin_buy", "write", ["finance"])
def buy(ctx: Ctx) -> Draft:
    ctx.need("buy_stock")
    q = ctx.choose(ctx.records("quotes"))
    shares = ctx.choose([2, 5, 10, 15, 20])
    held = ctx.world.get("holdings", {}).get(q["symbol"])
    after = (held["shares"] if held else 0) + shares
    prompt = ctx.say(
        [
            "Buy {n} shares of {s}.",
            "Please purchase {n} {s} shares for the portfolio.",
            "Place a buy for {n} shares of {s}.",
        ],
        ["Add {n} more {s} shares to our holdings by buying them."],
        n=shares,
        s=q["symbol"],
    )
    rule = f"The portfolio must hold {after} shares of {q['symbol']} afterwards."
    return write(
        prompt,
        Step("buy_stock", {"symbol": q["symbol"], "shares": shares}, purpose=f"buy {shares} {q['symbol']}"),
        [change(rule, "holdings", q["symbol"], "shares", after, "update" if held else "create")],
        f"Bought {shares} shares of {q['symbol']}; the portfolio now holds {after}.",
        keep=[q["symbol"], str(shares)],
    )


# -- weather ----------------------------------------------------------------------------------------


def _weather_day(ctx: Ctx) -> tuple[str, str]:
    rec = ctx.choose(ctx.records("weather"))
    return rec["city"], rec["date"]


@template("wx_day", "lookup", ["weather"])
def weather_day(ctx: Ctx) -> Draft:
    ctx.need("get_weather")
    city, day = _weather_day(ctx)
    rec = ctx.world["weather"][f"{city}|{day}"]
    fld, words, norm = ctx.choose(
        [
            ("high_c", "high temperature (in C)", "number"),
            ("condition", "weather condition", "text"),
            ("precipitation_mm", "precipitation in mm", "number"),
        ]
    )
    prompt = ctx.say(
        [
            "What is the {w} in {c} on {d}?",
            "Check the weather for {c} on {d}: what's the {w}?",
            "{c}, {d}: tell me the {w}.",
        ],
        ["I'd like the {w} for {c} on the date {d}."],
        w=words,
        c=city,
        d=day,
    )
    return lookup(
        prompt,
        Step(
            "get_weather",
            {"city": city, "day": day},
            normalize={"city": "text", "day": "date"},
            purpose=f"get the weather in {city} on {day}",
        ),
        fld,
        rec[fld],
        f"the {words} in {city} on {day} is {rec[fld]}",
        f"In {city} on {day} the {words} is {rec[fld]}.",
        norm,
        0.05 if norm == "number" else 0.0,
        keep=[city, day],
    )


@template("wx_compare", "aggregate", ["weather"], calls=(2, 2))
def weather_compare(ctx: Ctx) -> Draft:
    ctx.need("get_weather")
    cities = sorted({w["city"] for w in ctx.records("weather")})
    a, b = ctx.rng.sample(cities, 2)
    day = ctx.choose(sorted({w["date"] for w in ctx.records("weather")}))
    ha, hb = ctx.world["weather"][f"{a}|{day}"]["high_c"], ctx.world["weather"][f"{b}|{day}"]["high_c"]
    if ha == hb:
        raise Skip("tie")
    warmer = a if ha > hb else b
    prompt = ctx.say(
        [
            "Which is warmer on {d}, {a} or {b}?",
            "Compare the high temperatures of {a} and {b} on {d}. Which city is warmer?",
        ],
        ["On {d}, will {a} or {b} see the higher temperature?"],
        a=a,
        b=b,
        d=day,
    )

    def recompute(r):
        x, y = payload(r[0]), payload(r[1])
        return {"warmer": x["city"] if x["high_c"] > y["high_c"] else y["city"]}

    steps = [
        Step(
            "get_weather",
            {"city": c, "day": day},
            alternatives=["compare_weather"],
            checked_args=["city"],
            normalize={"city": "text"},
            purpose=f"get {c}'s weather",
        )
        for c in (a, b)
    ]
    return read(
        prompt,
        steps,
        [Answer("warmer", warmer, "text", text=f"{warmer} is warmer on {day} ({ha} C vs {hb} C)")],
        f"{warmer} is warmer on {day}: {a} {ha} C, {b} {hb} C.",
        recompute,
        keep=[a, b, day],
    )


# -- calendar, email, chat, files -------------------------------------------------------------------


@template("cal_day_count", "aggregate", ["calendar"])
def events_on_day(ctx: Ctx) -> Draft:
    ctx.need("list_events")
    day = ctx.choose(sorted({e["start"][:10] for e in ctx.records("events")}))
    n = len(ctx.records("events", lambda e: e["start"][:10] == day))
    prompt = ctx.say(
        [
            "How many meetings are on the calendar for {d}?",
            "Count the calendar events scheduled on {d}.",
            "What's the number of events on {d}?",
        ],
        ["Tell me how many events take place on {d}."],
        d=day,
    )
    step = listing(
        "list_events",
        {"start_date": day, "end_date": day},
        f"list the events on {day}",
        normalize={"start_date": "date", "end_date": "date"},
    )
    return count(prompt, step, n, f"events on {day}", keep=[day])


@template("cal_reschedule", "write", ["calendar"])
def reschedule(ctx: Ctx) -> Draft:
    ctx.need("reschedule_event")
    ev = ctx.choose(ctx.records("events"))
    day = ctx.choose(["2025-11-24", "2025-11-25", "2025-11-26", "2025-11-27", "2025-11-28"])
    start = f"{day}T{ctx.choose(['08:00', '08:30', '17:00', '17:30'])}"
    prompt = ctx.say(
        [
            'Move the event {id} ("{t}") to start at {s}.',
            "Please reschedule {id} to {s}.",
            'Push "{t}" ({id}) to {s}, same length.',
        ],
        ["Event {id} should now begin at {s}; update the calendar."],
        id=ev["id"],
        t=ev["title"],
        s=start,
    )
    return write(
        prompt,
        Step("reschedule_event", {"event_id": ev["id"], "start": start}, purpose="move the event"),
        [change(f"Event {ev['id']} must start at {start} afterwards.", "events", ev["id"], "start", start)],
        f"Event {ev['id']} now starts at {start}.",
        keep=[ev["id"], start],
    )


@template("email_unread", "aggregate", ["email"])
def unread(ctx: Ctx) -> Draft:
    ctx.need("list_emails")
    n = len(ctx.records("emails", lambda m: m["folder"] == "inbox" and not m["read"]))
    prompt = ctx.say(
        [
            "How many unread emails are in the inbox?",
            "Count my unread inbox messages.",
            "Do I have unread mail? How many?",
        ],
        ["What's the number of inbox emails I haven't read yet?"],
    )
    step = listing(
        "list_emails",
        {"folder": "inbox", "unread_only": True},
        "list unread inbox emails",
        checked_args=["unread_only"],
    )
    return count(prompt, step, n, "unread emails in the inbox")


@template("email_label", "write", ["email"])
def label(ctx: Ctx) -> Draft:
    ctx.need("label_email")
    m = ctx.choose(ctx.records("emails"))
    lab = one_of(
        ctx, [x for x in ("important", "billing", "sales", "follow-up", "urgent") if x not in m["labels"]]
    )
    new = sorted(set(m["labels"]) | {lab})
    prompt = ctx.say(
        [
            'Label email {id} as "{l}".',
            "Add the {l} label to message {id}.",
            "Please tag the email {id} with {l}.",
        ],
        ['Put a "{l}" label on mail {id}.'],
        id=m["id"],
        l=lab,
    )
    return write(
        prompt,
        Step("label_email", {"email_id": m["id"], "label": lab}, purpose=f"add the {lab} label"),
        [
            change(
                f"Email {m['id']} must carry the labels {new} afterwards.", "emails", m["id"], "labels", new
            )
        ],
        f'Email {m["id"]} is now labelled "{lab}".',
        keep=[m["id"], lab],
    )


@template("chat_channel_messages", "aggregate", ["chat"], calls=(2, 2))
def channel_messages(ctx: Ctx) -> Draft:
    ctx.need("list_channels", "read_channel")
    ch = ctx.choose(ctx.records("channels"))
    n = len(ctx.records("messages", lambda m: m["channel_id"] == ch["id"]))
    prompt = ctx.say(
        [
            "How many messages are there in the #{c} channel?",
            "Count the posts in the {c} chat channel.",
            "What's the message count of channel #{c}?",
        ],
        ["Tell me how many messages #{c} holds."],
        c=ch["name"],
    )
    steps = chain(
        Step("list_channels", {}, purpose="find the channel id", produces="channel id"),
        listing("read_channel", {"channel_id": ch["id"]}, f"read #{ch['name']}"),
    )
    text = f"#{ch['name']} has {n} messages"
    return count(prompt, steps, n, "", text, text + ".", keep=[ch["name"]])


@template("chat_set_topic", "write", ["chat"], calls=(2, 2))
def set_topic(ctx: Ctx) -> Draft:
    ctx.need("list_channels", "set_channel_topic")
    ch = ctx.choose(ctx.records("channels"))
    topic = ctx.choose(
        ["Q4 planning", "Release freeze this week", "Holiday coverage", "Customer escalations", "Office move"]
    )
    prompt = ctx.say(
        ['Set the topic of #{c} to "{t}".', 'Change the {c} channel topic to "{t}".'],
        ['Update #{c} so its topic reads "{t}".'],
        c=ch["name"],
        t=topic,
    )
    steps = chain(
        Step("list_channels", {}, purpose="find the channel id", produces="channel id"),
        Step(
            "set_channel_topic",
            {"channel_id": ch["id"], "topic": topic},
            normalize={"topic": "text"},
            purpose="set the topic",
        ),
    )
    rule = f'Channel {ch["id"]} (#{ch["name"]}) must have the topic "{topic}" afterwards.'
    return write(
        prompt,
        steps,
        [change(rule, "channels", ch["id"], "topic", topic)],
        f'#{ch["name"]} now has the topic "{topic}".',
        keep=[ch["name"], topic],
    )


@template("fs_write_note", "write", ["filesystem"])
def write_note(ctx: Ctx) -> Draft:
    ctx.need("write_file")
    name = ctx.choose(["meeting-notes", "todo-next-week", "handover", "ideas", "standup"])
    folder = ctx.choose(["/shared", "/reports", "/docs"])
    path = f"{folder}/{name}.txt"
    if path in ctx.world.get("files", {}):
        raise Skip("exists")
    content = ctx.choose(
        [
            "Call the customer back on Monday.",
            "Review open billing tickets.",
            "Prepare the Q4 pipeline summary.",
        ]
    )
    prompt = ctx.say(
        ['Create a file {p} containing: "{c}"', 'Write "{c}" into a new file at {p}.'],
        ['Save the text "{c}" as {p}.'],
        p=path,
        c=content,
    )
    return write(
        prompt,
        Step(
            "write_file",
            {"path": path, "content": content},
            normalize={"content": "text"},
            purpose=f"write {path}",
        ),
        [
            change(
                f"The file {path} must exist with the requested content.",
                "files",
                path,
                "content",
                content,
                "create",
            )
        ],
        f"Created {path}.",
        keep=[path, content],
    )


# -- calculator as an optional step ------------------------------------------------------------------


@template("hd_tag_change", "aggregate", ["helpdesk", "calculator"], calls=(3, 3))
def tag_change(ctx: Ctx) -> Draft:
    """Two counts and a percentage change (Scale's sample asks one like it); the calculator call is
    optional: a model may do the arithmetic itself."""
    ctx.need("search_tickets", "percent_change")
    tags = sorted({tag for t in ctx.records("tickets") for tag in t["tags"]})
    a, b = ctx.rng.sample(tags, 2)
    na = len(ctx.records("tickets", lambda t: a in t["tags"]))
    nb = len(ctx.records("tickets", lambda t: b in t["tags"]))
    pc = round((nb - na) / na * 100, 1)
    prompt = ctx.say(
        [
            "Compare the number of {a} tickets with the number of {b} tickets: by what percentage is the {b} count higher or lower than the {a} count?",
            "Count tickets tagged {a} and tickets tagged {b}, then give the percentage change going from {a} to {b}.",
        ],
        ["What's the percent difference between {a}-tagged and {b}-tagged ticket volumes (relative to {a})?"],
        a=a,
        b=b,
    )

    def recompute(r):
        x, y = total(r[0]), total(r[1])
        return {"count_a": x, "count_b": y, "percent_change": round(field_of(r[2], "percent_change"), 1)}

    return read(
        prompt,
        [
            listing("search_tickets", {"tag": a}, f"count the {a} tickets", produces="count"),
            listing("search_tickets", {"tag": b}, f"count the {b} tickets", produces="count"),
            Step(
                "percent_change",
                {"old": na, "new": nb},
                depends_on=[0, 1],
                normalize={"old": "number", "new": "number"},
                purpose="compute the percentage change",
                optional=True,
            ),
        ],
        [
            Answer("count_a", na, "number", text=f"there are {na} {a} tickets", intermediate=True),
            Answer("count_b", nb, "number", text=f"there are {nb} {b} tickets", intermediate=True),
            Answer("percent_change", pc, "number", 0.1, text=f"the change from {a} to {b} is {pc}%"),
        ],
        f"There are {na} {a} tickets and {nb} {b} tickets, a change of {pc}%.",
        recompute,
        keep=[a, b],
    )
