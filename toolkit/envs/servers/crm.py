"""CRM: companies, contacts (the customers who raise tickets and place orders), deals and activities."""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, matches, paginate, tool
from toolkit.envs.world import NOW

Stage = Literal["prospecting", "qualification", "proposal", "negotiation", "won", "lost"]
CompanyId = Annotated[str, Field(description="Company id, e.g. 'co-001'.")]
ContactId = Annotated[str, Field(description="Contact (customer) id, e.g. 'cu-001'.")]
DealId = Annotated[str, Field(description="Deal id, e.g. 'd-001'.")]
STAMP = NOW.isoformat(timespec="minutes")


class Crm(DomainServer):
    name = "crm"
    description = "Customer relationship management: companies, contacts, sales deals and their activities."

    def _company(self, company_id: str) -> dict[str, Any]:
        return self.require("companies", company_id, "Company", "Use search_companies to find company ids.")

    def _contact(self, contact_id: str) -> dict[str, Any]:
        return self.require("customers", contact_id, "Contact", "Use search_contacts to find contact ids.")

    def _deal(self, deal_id: str) -> dict[str, Any]:
        return self.require("deals", deal_id, "Deal", "Use list_deals to find deal ids.")

    @tool(read_only=True)
    def search_companies(
        self,
        query: Annotated[str | None, Field(description="Text to find in the company name.")] = None,
        industry: Annotated[str | None, Field(description="Only this industry, e.g. 'healthcare'.")] = None,
        city: Annotated[str | None, Field(description="Only companies in this city.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Search companies by name, industry or city."""
        rows = [
            c
            for c in self.db.values("companies")
            if matches(c["name"], query)
            and (industry is None or c["industry"] == industry.lower())
            and (city is None or c["city"].lower() == city.lower())
        ]
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_company(self, company_id: CompanyId) -> dict[str, Any]:
        """One company with its contacts and open deals."""
        c = self._company(company_id)
        contacts = [
            {"id": x["id"], "name": x["name"]}
            for x in self.db.values("customers")
            if x["company_id"] == company_id
        ]
        deals = [
            {"id": d["id"], "name": d["name"], "stage": d["stage"], "amount": d["amount"]}
            for d in self.db.values("deals")
            if d["company_id"] == company_id
        ]
        return {**c, "contacts": contacts, "deals": deals}

    @tool(idempotent=True)
    def update_company(
        self,
        company_id: CompanyId,
        tier: Annotated[
            Literal["standard", "premium", "enterprise"] | None, Field(description="New tier.")
        ] = None,
        account_manager_id: Annotated[
            str | None, Field(description="Staff id of the new account manager.")
        ] = None,
        city: Annotated[str | None, Field(description="New city.")] = None,
    ) -> dict[str, Any]:
        """Change a company's tier, account manager or city. Pass only the fields to change."""
        self._company(company_id)
        if tier is None and account_manager_id is None and city is None:
            raise invalid("nothing to update: pass tier, account_manager_id or city.")
        if account_manager_id is not None:
            st = self.require(
                "staff", account_manager_id, "Staff member", "Use list_staff with team='sales'."
            )
            if st["team"] != "sales":
                raise invalid(
                    f"{account_manager_id} is in team '{st['team']}'; account managers are in sales."
                )
        c = self.db.edit("companies", company_id)
        for k, v in {"tier": tier, "account_manager_id": account_manager_id, "city": city}.items():
            if v is not None:
                c[k] = v
        return c

    @tool(read_only=True)
    def search_contacts(
        self,
        query: Annotated[str | None, Field(description="Text to find in the name or email.")] = None,
        company_id: Annotated[str | None, Field(description="Only contacts of this company id.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Search contacts (customers) by name, email or company."""
        rows = [
            c
            for c in self.db.values("customers")
            if (matches(c["name"], query) or matches(c["email"], query))
            and (company_id is None or c["company_id"] == company_id)
        ]
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_contact(self, contact_id: ContactId) -> dict[str, Any]:
        """One contact with their company name."""
        c = self._contact(contact_id)
        return {**c, "company_name": self._company(c["company_id"])["name"]}

    @tool(idempotent=False)
    def create_contact(
        self,
        name: Annotated[str, Field(min_length=2, description="Full name.")],
        email: Annotated[str, Field(description="Email address (must be unique).")],
        company_id: CompanyId,
        title: Annotated[str, Field(description="Job title.")] = "",
        phone: Annotated[str, Field(description="Phone number.")] = "",
    ) -> dict[str, Any]:
        """Add a contact to a company."""
        if "@" not in email:
            raise invalid(f"'{email}' is not an email address.")
        company = self._company(company_id)
        if any(c["email"].lower() == email.lower() for c in self.db.values("customers")):
            raise conflict(f"a contact with email {email} already exists; use search_contacts to find it.")
        cid = self.next_id("customers", "cu-")
        rec = {"id": cid, "name": name, "email": email, "phone": phone, "company_id": company_id, "title": title,
               "city": company["city"], "created": NOW.date().isoformat()}  # fmt: skip
        self.db.put("customers", cid, rec)
        return rec

    @tool(idempotent=True)
    def update_contact(
        self,
        contact_id: ContactId,
        email: Annotated[str | None, Field(description="New email.")] = None,
        phone: Annotated[str | None, Field(description="New phone.")] = None,
        title: Annotated[str | None, Field(description="New job title.")] = None,
    ) -> dict[str, Any]:
        """Change a contact's email, phone or title. Pass only the fields to change."""
        self._contact(contact_id)
        if email is None and phone is None and title is None:
            raise invalid("nothing to update: pass email, phone or title.")
        if email is not None and "@" not in email:
            raise invalid(f"'{email}' is not an email address.")
        c = self.db.edit("customers", contact_id)
        for k, v in {"email": email, "phone": phone, "title": title}.items():
            if v is not None:
                c[k] = v
        return c

    @tool(destructive=True, idempotent=True)
    def delete_contact(self, contact_id: ContactId) -> dict[str, Any]:
        """Delete a contact. Refused while the contact has open tickets or deals."""
        self._contact(contact_id)
        open_tickets = [
            t["id"]
            for t in self.db.values("tickets")
            if t["requester_id"] == contact_id and t["status"] != "closed"
        ]
        deals = [d["id"] for d in self.db.values("deals") if d["contact_id"] == contact_id]
        if open_tickets or deals:
            raise conflict(f"contact {contact_id} still has tickets {open_tickets} and deals {deals}.")
        self.db.delete("customers", contact_id)
        return {"deleted": contact_id}

    @tool(read_only=True)
    def list_deals(
        self,
        company_id: Annotated[str | None, Field(description="Only deals of this company id.")] = None,
        stage: Annotated[Stage | None, Field(description="Only deals in this stage.")] = None,
        owner_id: Annotated[str | None, Field(description="Only deals owned by this staff id.")] = None,
        min_amount: Annotated[
            float | None, Field(ge=0, description="Only deals worth at least this (USD).")
        ] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List sales deals with optional filters, largest first."""
        rows = [
            d
            for d in self.db.values("deals")
            if (company_id is None or d["company_id"] == company_id)
            and (stage is None or d["stage"] == stage)
            and (owner_id is None or d["owner_id"] == owner_id)
            and (min_amount is None or d["amount"] >= min_amount)
        ]
        rows.sort(key=lambda d: (-d["amount"], d["id"]))
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_deal(self, deal_id: DealId) -> dict[str, Any]:
        """One deal with its activities."""
        d = self._deal(deal_id)
        acts = [a for a in self.db.values("activities") if a["deal_id"] == deal_id]
        return {**d, "activities": sorted(acts, key=lambda a: a["at"])}

    @tool(idempotent=False)
    def create_deal(
        self,
        name: Annotated[str, Field(min_length=3, description="Deal name.")],
        company_id: CompanyId,
        amount: Annotated[float, Field(gt=0, description="Deal value in USD.")],
        close_date: Annotated[str, Field(description="Expected close date, YYYY-MM-DD.")],
        contact_id: Annotated[
            str | None, Field(description="Main contact id (defaults to the first).")
        ] = None,
    ) -> dict[str, Any]:
        """Open a new deal in 'prospecting' for a company, owned by its account manager."""
        company = self._company(company_id)
        from datetime import date

        try:
            date.fromisoformat(close_date)
        except ValueError:
            raise invalid(f"close_date '{close_date}' is not YYYY-MM-DD.") from None
        contacts = [c["id"] for c in self.db.values("customers") if c["company_id"] == company_id]
        if contact_id is not None and contact_id not in contacts:
            raise invalid(
                f"contact {contact_id} does not belong to {company_id}; its contacts are {contacts}."
            )
        did = self.next_id("deals", "d-")
        rec = {"id": did, "name": name, "company_id": company_id, "contact_id": contact_id or contacts[0],
               "owner_id": company["account_manager_id"], "stage": "prospecting", "amount": float(amount),
               "close_date": close_date, "probability": 10}  # fmt: skip
        self.db.put("deals", did, rec)
        return rec

    @tool(idempotent=True)
    def update_deal(
        self,
        deal_id: DealId,
        stage: Annotated[Stage | None, Field(description="New stage.")] = None,
        amount: Annotated[float | None, Field(gt=0, description="New value in USD.")] = None,
        close_date: Annotated[str | None, Field(description="New close date, YYYY-MM-DD.")] = None,
    ) -> dict[str, Any]:
        """Move a deal to another stage or change its amount or close date. Won/lost deals are final."""
        d = self._deal(deal_id)
        if stage is None and amount is None and close_date is None:
            raise invalid("nothing to update: pass stage, amount or close_date.")
        if d["stage"] in ("won", "lost") and stage is not None and stage != d["stage"]:
            raise conflict(f"deal {deal_id} is already {d['stage']}; create a new deal instead.")
        d = self.db.edit("deals", deal_id)
        if stage is not None:
            d["stage"] = stage
            d["probability"] = {"won": 100, "lost": 0}.get(stage, d["probability"])
        if amount is not None:
            d["amount"] = float(amount)
        if close_date is not None:
            d["close_date"] = close_date
        return d

    @tool(idempotent=False)
    def log_activity(
        self,
        deal_id: DealId,
        kind: Annotated[Literal["call", "meeting", "email", "note"], Field(description="Kind of activity.")],
        summary: Annotated[str, Field(min_length=2, description="What happened.")],
    ) -> dict[str, Any]:
        """Record a call, meeting, email or note on a deal."""
        deal = self._deal(deal_id)
        aid = self.next_id("activities", "a-")
        rec = {
            "id": aid,
            "deal_id": deal_id,
            "kind": kind,
            "summary": summary,
            "by": deal["owner_id"],
            "at": STAMP,
        }
        self.db.put("activities", aid, rec)
        return rec

    @tool(read_only=True)
    def pipeline_summary(
        self, owner_id: Annotated[str | None, Field(description="Only deals owned by this staff id.")] = None
    ) -> dict[str, Any]:
        """Number and total value of deals per stage, plus the probability-weighted open pipeline."""
        per: dict[str, dict[str, float]] = defaultdict(lambda: {"count": 0, "amount": 0.0})
        weighted = 0.0
        for d in self.db.values("deals"):
            if owner_id is not None and d["owner_id"] != owner_id:
                continue
            per[d["stage"]]["count"] += 1
            per[d["stage"]]["amount"] += d["amount"]
            if d["stage"] not in ("won", "lost"):
                weighted += d["amount"] * d["probability"] / 100
        return {"stages": dict(sorted(per.items())), "weighted_open_pipeline": round(weighted, 2)}
