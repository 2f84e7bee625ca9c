"""Marketplace: third-party sellers' listings, buyers' offers on them, and seller reviews.

Not the company's own catalogue (that is the shop): outside sellers list goods, CRM customers make
offers, the seller accepts or rejects them, and buyers review sellers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.clock import NOW_ISO, TODAY
from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, matches, paginate, tool
from toolkit.envs.servers.dates import check_day

Condition = Literal["new", "like_new", "used", "refurbished"]
ListingStatus = Literal["active", "paused", "sold_out"]
OfferStatus = Literal["pending", "accepted", "rejected", "withdrawn"]
ListingId = Annotated[str, Field(description="Marketplace listing id, e.g. 'lst-001'.")]
SellerId = Annotated[str, Field(description="Marketplace seller id, e.g. 'sel-001'.")]
OfferId = Annotated[str, Field(description="Offer id, e.g. 'ofr-001'.")]
CustomerId = Annotated[str, Field(description="Buyer: a CRM customer id, e.g. 'cu-001'.")]


class Marketplace(DomainServer):
    name = "marketplace"
    description = (
        "Third-party marketplace: sellers, their listings (price, condition, quantity), buyers' offers "
        "(make, accept, reject, withdraw) and seller reviews."
    )

    def _listing(self, listing_id: str) -> dict[str, Any]:
        return self.require(
            "market_listings", listing_id, "Listing", "Use search_market_listings to find ids."
        )

    def _seller(self, seller_id: str) -> dict[str, Any]:
        return self.require(
            "market_sellers", seller_id, "Seller", "Use list_market_sellers to find seller ids."
        )

    def _offer(self, offer_id: str) -> dict[str, Any]:
        return self.require("market_offers", offer_id, "Offer", "Use list_market_offers to find offer ids.")

    def _rating(self, seller_id: str) -> tuple[float | None, int]:
        stars = [r["rating"] for r in self.db.values("market_reviews") if r["seller_id"] == seller_id]
        return (round(sum(stars) / len(stars), 2) if stars else None), len(stars)

    @tool(read_only=True)
    def list_market_sellers(
        self,
        query: Annotated[str | None, Field(description="Text to find in the seller name.")] = None,
        city: Annotated[str | None, Field(description="Only sellers based in this city.")] = None,
        verified_only: Annotated[bool, Field(description="Only verified sellers.")] = False,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List marketplace sellers by id, with their average review rating."""
        rows = [
            {**s, "avg_rating": self._rating(s["id"])[0]}
            for s in sorted(self.db.values("market_sellers"), key=lambda s: s["id"])
            if matches(s["name"], query)
            and (city is None or s["city"].lower() == city.lower())
            and (s["verified"] or not verified_only)
        ]
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_market_seller(self, seller_id: SellerId) -> dict[str, Any]:
        """One seller with review count, average rating and number of active listings."""
        s = self._seller(seller_id)
        avg, n = self._rating(seller_id)
        active = sum(
            1
            for x in self.db.values("market_listings")
            if x["seller_id"] == seller_id and x["status"] == "active"
        )
        return {**s, "avg_rating": avg, "review_count": n, "active_listings": active}

    @tool(read_only=True)
    def search_market_listings(
        self,
        query: Annotated[str | None, Field(description="Text to find in the listing title.")] = None,
        seller_id: Annotated[str | None, Field(description="Only listings of this seller id.")] = None,
        product_id: Annotated[str | None, Field(description="Only listings of this shop product id.")] = None,
        condition: Annotated[Condition | None, Field(description="Item condition.")] = None,
        status: Annotated[ListingStatus | None, Field(description="Listing status.")] = None,
        max_price: Annotated[float | None, Field(ge=0, description="Only listings up to this price.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Search listings, cheapest first."""
        if seller_id is not None:
            self._seller(seller_id)
        rows = [
            x
            for x in self.db.values("market_listings")
            if matches(x["title"], query)
            and (seller_id is None or x["seller_id"] == seller_id)
            and (product_id is None or x["product_id"] == product_id)
            and (condition is None or x["condition"] == condition)
            and (status is None or x["status"] == status)
            and (max_price is None or x["price"] <= max_price)
        ]
        rows.sort(key=lambda x: (x["price"], x["id"]))
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_market_listing(self, listing_id: ListingId) -> dict[str, Any]:
        """One listing with its seller's name and the number of pending offers on it."""
        x = self._listing(listing_id)
        pending = sum(
            1
            for o in self.db.values("market_offers")
            if o["listing_id"] == listing_id and o["status"] == "pending"
        )
        return {**x, "seller_name": self._seller(x["seller_id"])["name"], "pending_offers": pending}

    @tool(idempotent=False)
    def create_market_listing(
        self,
        seller_id: SellerId,
        title: Annotated[str, Field(min_length=3, max_length=120, description="What is sold.")],
        price: Annotated[float, Field(gt=0, le=1_000_000, description="Asking price in USD.")],
        quantity: Annotated[int, Field(ge=1, le=10000, description="Units for sale.")],
        condition: Annotated[Condition, Field(description="Item condition.")] = "new",
        product_id: Annotated[
            str | None, Field(description="The shop product id this listing sells, if any.")
        ] = None,
    ) -> dict[str, Any]:
        """Post a new active listing for a seller."""
        self._seller(seller_id)
        if product_id is not None:
            self.require("products", product_id, "Product", "Use search_products to find product ids.")
        lid = self.next_id("market_listings", "lst-")
        rec = {"id": lid, "seller_id": seller_id, "title": title, "product_id": product_id,
               "condition": condition, "price": round(price, 2), "quantity": quantity, "status": "active",
               "created": TODAY.isoformat()}  # fmt: skip
        self.db.put("market_listings", lid, rec)
        return rec

    @tool(idempotent=True)
    def update_market_listing(
        self,
        listing_id: ListingId,
        price: Annotated[float | None, Field(gt=0, le=1_000_000, description="New asking price.")] = None,
        quantity: Annotated[int | None, Field(ge=0, le=10000, description="New units for sale.")] = None,
        status: Annotated[ListingStatus | None, Field(description="New status.")] = None,
    ) -> dict[str, Any]:
        """Change a listing's price, quantity or status (quantity 0 marks it sold_out)."""
        old = self._listing(listing_id)
        if price is None and quantity is None and status is None:
            raise invalid("give at least one of price, quantity, status.")
        left = old["quantity"] if quantity is None else quantity
        if status == "active" and left == 0:  # checked before any change: an error writes nothing
            raise conflict(f"listing {listing_id} has quantity 0; set a quantity to reactivate it.")
        x = self.db.edit("market_listings", listing_id)
        if price is not None:
            x["price"] = round(price, 2)
        if quantity is not None:
            x["quantity"] = quantity
        if status is not None:
            x["status"] = status
        elif quantity == 0:
            x["status"] = "sold_out"
        return x

    @tool(destructive=True, idempotent=True)
    def delete_market_listing(self, listing_id: ListingId) -> dict[str, Any]:
        """Remove a listing; its pending offers are rejected."""
        self._listing(listing_id)
        rejected = []
        for o in self.db.values("market_offers"):
            if o["listing_id"] == listing_id and o["status"] == "pending":
                self.db.edit("market_offers", o["id"])["status"] = "rejected"
                rejected.append(o["id"])
        self.db.delete("market_listings", listing_id)
        return {"deleted": listing_id, "rejected_offers": rejected}

    @tool(read_only=True)
    def list_market_offers(
        self,
        listing_id: Annotated[str | None, Field(description="Only offers on this listing id.")] = None,
        buyer_id: Annotated[str | None, Field(description="Only offers by this customer id.")] = None,
        status: Annotated[OfferStatus | None, Field(description="Offer status.")] = None,
        since: Annotated[
            str | None, Field(description="Only offers made on or after this day, YYYY-MM-DD.")
        ] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List offers, highest amount first."""
        if listing_id is not None:
            self._listing(listing_id)
        check_day(since, "since")
        rows = [
            o
            for o in self.db.values("market_offers")
            if (listing_id is None or o["listing_id"] == listing_id)
            and (buyer_id is None or o["buyer_id"] == buyer_id)
            and (status is None or o["status"] == status)
            and (since is None or o["created"] >= since)
        ]
        rows.sort(key=lambda o: (-o["amount"], o["id"]))
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_market_offer(self, offer_id: OfferId) -> dict[str, Any]:
        """One offer with the listing title, asking price and the buyer's name."""
        o = self._offer(offer_id)
        x = self.db.get("market_listings", o["listing_id"]) or {}
        buyer = self.db.get("customers", o["buyer_id"]) or {}
        return {
            **o,
            "listing_title": x.get("title"),
            "asking_price": x.get("price"),
            "buyer_name": buyer.get("name"),
        }

    @tool(idempotent=False)
    def make_market_offer(
        self,
        listing_id: ListingId,
        buyer_id: CustomerId,
        amount: Annotated[float, Field(gt=0, le=1_000_000, description="Offered price per unit in USD.")],
        message: Annotated[str, Field(max_length=500, description="Note to the seller.")] = "",
    ) -> dict[str, Any]:
        """Make an offer on an active listing on behalf of a customer (status 'pending')."""
        x = self._listing(listing_id)
        self.require("customers", buyer_id, "Customer", "Use search_contacts to find customer ids.")
        if x["status"] != "active":
            raise conflict(f"listing {listing_id} is '{x['status']}'; offers need an active listing.")
        if amount > x["price"]:
            raise invalid(
                f"offer {amount} is above the asking price {x['price']}; offer at most the asking price."
            )
        oid = self.next_id("market_offers", "ofr-")
        rec = {"id": oid, "listing_id": listing_id, "buyer_id": buyer_id, "amount": round(amount, 2),
               "quantity": 1, "status": "pending", "created": TODAY.isoformat(), "message": message}  # fmt: skip
        self.db.put("market_offers", oid, rec)
        return rec

    @tool(idempotent=True)
    def respond_market_offer(
        self,
        offer_id: OfferId,
        decision: Annotated[Literal["accept", "reject"], Field(description="Accept or reject the offer.")],
    ) -> dict[str, Any]:
        """The seller's answer to a pending offer. Accepting takes one unit off the listing."""
        o = self._offer(offer_id)
        want = "accepted" if decision == "accept" else "rejected"
        if o["status"] == want:
            return o
        if o["status"] != "pending":
            raise conflict(f"offer {offer_id} is '{o['status']}'; only pending offers can be answered.")
        if decision == "accept":
            x = self._listing(o["listing_id"])
            if x["quantity"] < o["quantity"]:
                raise conflict(f"listing {x['id']} has no units left; reject the offer instead.")
            x = self.db.edit("market_listings", x["id"])
            x["quantity"] -= o["quantity"]
            if x["quantity"] == 0:
                x["status"] = "sold_out"
        o = self.db.edit("market_offers", offer_id)
        o["status"], o["answered"] = want, NOW_ISO
        return o

    @tool(idempotent=True)
    def withdraw_market_offer(self, offer_id: OfferId) -> dict[str, Any]:
        """The buyer withdraws a pending offer."""
        o = self._offer(offer_id)
        if o["status"] == "withdrawn":
            return o
        if o["status"] != "pending":
            raise conflict(f"offer {offer_id} is '{o['status']}'; only pending offers can be withdrawn.")
        o = self.db.edit("market_offers", offer_id)
        o["status"] = "withdrawn"
        return o

    @tool(read_only=True)
    def list_market_reviews(
        self,
        seller_id: SellerId,
        min_rating: Annotated[
            int, Field(ge=1, le=5, description="Only reviews with at least this rating.")
        ] = 1,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """A seller's reviews, newest first."""
        self._seller(seller_id)
        rows = [
            r
            for r in self.db.values("market_reviews")
            if r["seller_id"] == seller_id and r["rating"] >= min_rating
        ]
        rows.sort(key=lambda r: (r["date"], r["id"]), reverse=True)
        return paginate(rows, limit, cursor)

    @tool(idempotent=False)
    def add_market_review(
        self,
        seller_id: SellerId,
        buyer_id: CustomerId,
        rating: Annotated[int, Field(ge=1, le=5, description="Stars, 1 (bad) to 5 (great).")],
        comment: Annotated[str, Field(max_length=1000, description="Review text.")] = "",
    ) -> dict[str, Any]:
        """Review a seller on behalf of a customer who had an accepted offer with them."""
        self._seller(seller_id)
        self.require("customers", buyer_id, "Customer", "Use search_contacts to find customer ids.")
        bought = any(
            o["buyer_id"] == buyer_id
            and o["status"] == "accepted"
            and (self.db.get("market_listings", o["listing_id"]) or {}).get("seller_id") == seller_id
            for o in self.db.values("market_offers")
        )
        if not bought:
            raise conflict(
                f"customer {buyer_id} has no accepted offer with seller {seller_id}; only buyers can review."
            )
        rid = self.next_id("market_reviews", "rev-")
        rec = {"id": rid, "seller_id": seller_id, "buyer_id": buyer_id, "rating": rating, "comment": comment,
               "date": TODAY.isoformat()}  # fmt: skip
        self.db.put("market_reviews", rid, rec)
        return rec

    @tool(read_only=True)
    def market_seller_report(
        self,
        seller_id: SellerId,
        start_date: Annotated[str | None, Field(description="First offer day, YYYY-MM-DD.")] = None,
        end_date: Annotated[str | None, Field(description="Last offer day, YYYY-MM-DD.")] = None,
    ) -> dict[str, Any]:
        """A seller's listings by status, offers by status and accepted-offer revenue over a date range."""
        self._seller(seller_id)
        check_day(start_date, "start_date"), check_day(end_date, "end_date")
        mine = {x["id"] for x in self.db.values("market_listings") if x["seller_id"] == seller_id}
        listings: dict[str, int] = {}
        for x in self.db.values("market_listings"):
            if x["id"] in mine:
                listings[x["status"]] = listings.get(x["status"], 0) + 1
        offers: dict[str, int] = {}
        revenue = 0.0
        for o in self.db.values("market_offers"):
            if o["listing_id"] not in mine:
                continue
            if (start_date and o["created"] < start_date) or (end_date and o["created"] > end_date):
                continue
            offers[o["status"]] = offers.get(o["status"], 0) + 1
            if o["status"] == "accepted":
                revenue += o["amount"] * o["quantity"]
        avg, n = self._rating(seller_id)
        return {"seller_id": seller_id, "listings_by_status": dict(sorted(listings.items())),
                "offers_by_status": dict(sorted(offers.items())), "accepted_revenue": round(revenue, 2),
                "avg_rating": avg, "review_count": n}  # fmt: skip
