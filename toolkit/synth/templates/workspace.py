"""Templates for the other domain servers: shop, finance, weather, calendar, email, chat, files, and
the calculator as an optional helper step."""

from __future__ import annotations

from toolkit.synth.base import Answer, Draft, Step, payload
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import ALL, field_of, fmt_num, items, one_of, total, unique_by

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
    return Draft(
        "",
        "",
        prompt,
        ["shop"],
        [
            Step(
                "list_orders",
                {"status": status, "limit": ALL},
                checked_args=["status"],
                purpose=f"list {status} orders",
            )
        ],
        answers=[Answer("count", n, "number", text=f"there are {n} {status} orders")],
        reference_answer=f"There are {n} {status} orders.",
        recompute=lambda r: {"count": total(r[0])},
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
    return Draft(
        "",
        "",
        prompt,
        ["crm", "shop"],
        [
            Step(
                "search_contacts",
                {"query": cust["name"]},
                normalize={"query": "name"},
                purpose=f"find {cust['name']}",
                produces="customer id",
            ),
            Step(
                "list_orders",
                {"customer_id": cust["id"], "limit": ALL},
                depends_on=[0],
                checked_args=["customer_id"],
                purpose=f"list {cust['name']}'s orders",
            ),
        ],
        answers=[
            Answer("amount", value, "number", 0.5, text=f"{cust['name']} spent {fmt_num(value)} USD {words}")
        ],
        reference_answer=f"{cust['name']} spent {fmt_num(value)} USD {words} (cancelled and refunded orders excluded).",
        recompute=lambda r: {"amount": calc(items(r[1]))},
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
    check = {
        "type": "state",
        "collection": "products",
        "key": prod["id"],
        "field": "stock",
        "value": stock,
        "op": "update",
    }
    return Draft(
        "",
        "",
        prompt,
        ["shop"],
        [
            Step(
                "search_products",
                {"query": prod["name"]},
                normalize={"query": "text"},
                purpose=f"find {prod['name']}",
                produces="product id",
            ),
            Step(
                "update_stock",
                {"product_id": prod["id"], "stock": stock},
                depends_on=[0],
                purpose="set the stock",
            ),
        ],
        state_changes=[(f"Product {prod['id']} ({prod['name']}) must have stock {stock} afterwards.", check)],
        reference_answer=f"{prod['name']} ({prod['id']}) now has {stock} units in stock.",
        keep=[prod["name"], str(stock)],
        read_only=False,
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
    steps = []
    if by_name:
        steps.append(
            Step(
                "search_symbols",
                {"query": q["name"]},
                normalize={"query": "text"},
                purpose=f"find the ticker of {q['name']}",
                produces="symbol",
            )
        )
    steps.append(
        Step(
            "get_stock_quote",
            {"symbol": q["symbol"]},
            depends_on=[0] if by_name else [],
            purpose=f"get the quote for {q['symbol']}",
        )
    )
    return Draft(
        "",
        "",
        prompt,
        ["finance"],
        steps,
        answers=[Answer("close", close, "number", 0.01, text=f"{q['symbol']} last closed at {close} USD")],
        reference_answer=f"{q['name']} ({q['symbol']}) last closed at {close} USD.",
        recompute=lambda r: {"close": field_of(r[-1], "close")},
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

    return Draft(
        "",
        "",
        prompt,
        ["finance"],
        [Step("list_holdings", {}, purpose="list the portfolio holdings")],
        answers=[
            Answer("shares", h["shares"], "number", text=f"we hold {h['shares']} shares of {h['symbol']}")
        ],
        reference_answer=f"We hold {h['shares']} shares of {h['symbol']}.",
        recompute=recompute,
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
    check = {
        "type": "state",
        "collection": "holdings",
        "key": q["symbol"],
        "field": "shares",
        "value": after,
        "op": "update" if held else "create",
    }
    return Draft(
        "",
        "",
        prompt,
        ["finance"],
        [Step("buy_stock", {"symbol": q["symbol"], "shares": shares}, purpose=f"buy {shares} {q['symbol']}")],
        state_changes=[(f"The portfolio must hold {after} shares of {q['symbol']} afterwards.", check)],
        reference_answer=f"Bought {shares} shares of {q['symbol']}; the portfolio now holds {after}.",
        keep=[q["symbol"], str(shares)],
        read_only=False,
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
    return Draft(
        "",
        "",
        prompt,
        ["weather"],
        [
            Step(
                "get_weather",
                {"city": city, "day": day},
                normalize={"city": "text", "day": "date"},
                purpose=f"get the weather in {city} on {day}",
            )
        ],
        answers=[
            Answer(
                fld,
                rec[fld],
                norm,
                0.05 if norm == "number" else 0.0,
                text=f"the {words} in {city} on {day} is {rec[fld]}",
            )
        ],
        reference_answer=f"In {city} on {day} the {words} is {rec[fld]}.",
        recompute=lambda r: {fld: field_of(r[0], fld)},
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

    return Draft(
        "",
        "",
        prompt,
        ["weather"],
        [
            Step(
                "get_weather",
                {"city": a, "day": day},
                alternatives=["compare_weather"],
                checked_args=["city"],
                normalize={"city": "text"},
                purpose=f"get {a}'s weather",
            ),
            Step(
                "get_weather",
                {"city": b, "day": day},
                alternatives=["compare_weather"],
                checked_args=["city"],
                normalize={"city": "text"},
                purpose=f"get {b}'s weather",
            ),
        ],
        answers=[Answer("warmer", warmer, "text", text=f"{warmer} is warmer on {day} ({ha} C vs {hb} C)")],
        reference_answer=f"{warmer} is warmer on {day}: {a} {ha} C, {b} {hb} C.",
        recompute=recompute,
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
    return Draft(
        "",
        "",
        prompt,
        ["calendar"],
        [
            Step(
                "list_events",
                {"start_date": day, "end_date": day, "limit": ALL},
                checked_args=["start_date", "end_date"],
                normalize={"start_date": "date", "end_date": "date"},
                purpose=f"list the events on {day}",
            )
        ],
        answers=[Answer("count", n, "number", text=f"there are {n} events on {day}")],
        reference_answer=f"There are {n} events on {day}.",
        recompute=lambda r: {"count": total(r[0])},
        keep=[day],
    )


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
    check = {
        "type": "state",
        "collection": "events",
        "key": ev["id"],
        "field": "start",
        "value": start,
        "op": "update",
    }
    return Draft(
        "",
        "",
        prompt,
        ["calendar"],
        [Step("reschedule_event", {"event_id": ev["id"], "start": start}, purpose="move the event")],
        state_changes=[(f"Event {ev['id']} must start at {start} afterwards.", check)],
        reference_answer=f"Event {ev['id']} now starts at {start}.",
        keep=[ev["id"], start],
        read_only=False,
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
    return Draft(
        "",
        "",
        prompt,
        ["email"],
        [
            Step(
                "list_emails",
                {"folder": "inbox", "unread_only": True, "limit": ALL},
                checked_args=["unread_only"],
                purpose="list unread inbox emails",
            )
        ],
        answers=[Answer("count", n, "number", text=f"there are {n} unread emails in the inbox")],
        reference_answer=f"There are {n} unread emails in the inbox.",
        recompute=lambda r: {"count": total(r[0])},
    )


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
    check = {
        "type": "state",
        "collection": "emails",
        "key": m["id"],
        "field": "labels",
        "value": new,
        "op": "update",
    }
    return Draft(
        "",
        "",
        prompt,
        ["email"],
        [Step("label_email", {"email_id": m["id"], "label": lab}, purpose=f"add the {lab} label")],
        state_changes=[(f"Email {m['id']} must carry the labels {new} afterwards.", check)],
        reference_answer=f'Email {m["id"]} is now labelled "{lab}".',
        keep=[m["id"], lab],
        read_only=False,
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
    return Draft(
        "",
        "",
        prompt,
        ["chat"],
        [
            Step("list_channels", {}, purpose="find the channel id", produces="channel id"),
            Step(
                "read_channel",
                {"channel_id": ch["id"], "limit": ALL},
                depends_on=[0],
                checked_args=["channel_id"],
                purpose=f"read #{ch['name']}",
            ),
        ],
        answers=[Answer("count", n, "number", text=f"#{ch['name']} has {n} messages")],
        reference_answer=f"#{ch['name']} has {n} messages.",
        recompute=lambda r: {"count": total(r[1])},
        keep=[ch["name"]],
    )


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
    check = {
        "type": "state",
        "collection": "channels",
        "key": ch["id"],
        "field": "topic",
        "value": topic,
        "op": "update",
    }
    return Draft(
        "",
        "",
        prompt,
        ["chat"],
        [
            Step("list_channels", {}, purpose="find the channel id", produces="channel id"),
            Step(
                "set_channel_topic",
                {"channel_id": ch["id"], "topic": topic},
                depends_on=[0],
                normalize={"topic": "text"},
                purpose="set the topic",
            ),
        ],
        state_changes=[
            (f'Channel {ch["id"]} (#{ch["name"]}) must have the topic "{topic}" afterwards.', check)
        ],
        reference_answer=f'#{ch["name"]} now has the topic "{topic}".',
        keep=[ch["name"], topic],
        read_only=False,
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
    check = {
        "type": "state",
        "collection": "files",
        "key": path,
        "field": "content",
        "value": content,
        "op": "create",
    }
    return Draft(
        "",
        "",
        prompt,
        ["filesystem"],
        [
            Step(
                "write_file",
                {"path": path, "content": content},
                normalize={"content": "text"},
                purpose=f"write {path}",
            )
        ],
        state_changes=[(f"The file {path} must exist with the requested content.", check)],
        reference_answer=f"Created {path}.",
        keep=[path, content],
        read_only=False,
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
    change = round((nb - na) / na * 100, 1)
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

    return Draft(
        "",
        "",
        prompt,
        ["helpdesk", "calculator"],
        [
            Step(
                "search_tickets",
                {"tag": a, "limit": ALL},
                checked_args=["tag"],
                purpose=f"count the {a} tickets",
                produces="count",
            ),
            Step(
                "search_tickets",
                {"tag": b, "limit": ALL},
                checked_args=["tag"],
                purpose=f"count the {b} tickets",
                produces="count",
            ),
            Step(
                "percent_change",
                {"old": na, "new": nb},
                depends_on=[0, 1],
                normalize={"old": "number", "new": "number"},
                purpose="compute the percentage change",
                optional=True,
            ),
        ],
        answers=[
            Answer("count_a", na, "number", text=f"there are {na} {a} tickets", intermediate=True),
            Answer("count_b", nb, "number", text=f"there are {nb} {b} tickets", intermediate=True),
            Answer("percent_change", change, "number", 0.1, text=f"the change from {a} to {b} is {change}%"),
        ],
        reference_answer=f"There are {na} {a} tickets and {nb} {b} tickets, a change of {change}%.",
        recompute=recompute,
        keep=[a, b],
    )
