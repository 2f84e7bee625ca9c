"""Banking: customers' checking and savings accounts, transactions, transfers, payees and cards."""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.clock import NOW_ISO, TODAY
from toolkit.envs.servers.base import (
    Cursor,
    DomainServer,
    Limit,
    conflict,
    invalid,
    matches,
    paginate,
    tool,
)
from toolkit.envs.servers.dates import check_month, check_window

AccountId = Annotated[str, Field(description="Bank account id, e.g. 'ba-1001'.")]
Amount = Annotated[float, Field(gt=0, le=1_000_000, description="Amount in USD (positive, 2 decimals).")]
Day = Annotated[str | None, Field(description="A day, YYYY-MM-DD.")]
AccountType = Literal["checking", "savings"]
Kind = Literal["deposit", "withdrawal", "card", "transfer_in", "transfer_out", "payment"]


def _cents(amount: float) -> float:
    if round(amount, 2) != amount:
        raise invalid(f"amount {amount} has more than 2 decimals.")
    return amount


class Banking(DomainServer):
    name = "banking"
    description = (
        "Bank accounts of customers: balances, transactions, statements, transfers, payees and cards."
    )

    def _account(self, account_id: str) -> dict[str, Any]:
        return self.require(
            "bank_accounts", account_id, "Bank account", "Use list_bank_accounts to find ids."
        )

    def _customer(self, customer_id: str) -> dict[str, Any]:
        return self.require("customers", customer_id, "Customer", "Use search_contacts to find customer ids.")

    def _usable(self, account_id: str) -> dict[str, Any]:
        acct = self._account(account_id)
        if acct["status"] != "open":
            raise conflict(f"account {account_id} is {acct['status']}; only open accounts can move money.")
        return acct

    def _post(self, account_id: str, amount: float, kind: str, category: str, description: str,
              counterparty: str) -> dict[str, Any]:  # fmt: skip
        """Book a transaction and move the balance (overdraft limit enforced on debits)."""
        acct = self._usable(account_id)
        after = round(acct["balance"] + amount, 2)
        if amount < 0 and after < -acct["overdraft_limit"]:
            raise conflict(
                f"insufficient funds in {account_id}: balance {acct['balance']}, overdraft limit "
                f"{acct['overdraft_limit']}, debit {-amount}."
            )
        self.db.edit("bank_accounts", account_id)["balance"] = after
        tid = self.next_id("bank_transactions", "btx-", 4)
        tx = {"id": tid, "account_id": account_id, "date": TODAY.isoformat(), "amount": amount, "kind": kind,
              "category": category, "description": description, "counterparty": counterparty}  # fmt: skip
        self.db.put("bank_transactions", tid, tx)
        return {**tx, "balance_after": after}

    def _txs(self, account_id: str | None = None) -> list[dict[str, Any]]:
        return [
            t
            for t in self.db.values("bank_transactions")
            if account_id is None or t["account_id"] == account_id
        ]

    # -- accounts ------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_bank_accounts(
        self,
        customer_id: Annotated[str | None, Field(description="Only accounts of this customer id.")] = None,
        type: Annotated[AccountType | None, Field(description="Only this account type.")] = None,
        status: Annotated[
            Literal["open", "frozen", "closed"] | None, Field(description="Only accounts with this status.")
        ] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List bank accounts (id, owner, type, balance, status), by account id."""
        if customer_id is not None:
            self._customer(customer_id)
        rows = [
            a
            for a in self.db.values("bank_accounts")
            if (customer_id is None or a["customer_id"] == customer_id)
            and (type is None or a["type"] == type)
            and (status is None or a["status"] == status)
        ]
        return paginate(sorted(rows, key=lambda a: a["id"]), limit, cursor)

    @tool(read_only=True)
    def get_bank_account(self, account_id: AccountId) -> dict[str, Any]:
        """One bank account with its owner's name and its number of transactions."""
        a = self._account(account_id)
        owner = self.db.get("customers", a["customer_id"]) or {}
        return {**a, "owner_name": owner.get("name"), "transactions": len(self._txs(account_id))}

    @tool(read_only=True)
    def get_bank_balance(self, account_id: AccountId) -> dict[str, Any]:
        """Current and available balance (balance plus overdraft) of an account."""
        a = self._account(account_id)
        return {"account_id": account_id, "balance": a["balance"], "currency": a["currency"],
                "available": round(a["balance"] + a["overdraft_limit"], 2), "as_of": NOW_ISO}  # fmt: skip

    @tool(idempotent=False)
    def open_bank_account(
        self,
        customer_id: Annotated[str, Field(description="Customer id of the owner, e.g. 'cu-001'.")],
        type: Annotated[AccountType, Field(description="Account type.")],
        initial_deposit: Annotated[
            float, Field(ge=0, le=1_000_000, description="Opening deposit in USD (0 for none).")
        ] = 0.0,
    ) -> dict[str, Any]:
        """Open a new account for a customer, optionally with an opening deposit."""
        self._customer(customer_id)
        deposit = _cents(initial_deposit)  # validate before the account is written
        aid = self.next_id("bank_accounts", "ba-", 4, start=1001)
        acct = {"id": aid, "customer_id": customer_id, "type": type, "number": f"NW{9_000_000_000 + int(aid[3:])}",
                "balance": 0.0, "currency": "USD", "status": "open",
                "overdraft_limit": 500.0 if type == "checking" else 0.0, "opened": TODAY.isoformat()}  # fmt: skip
        self.db.put("bank_accounts", aid, acct)
        if deposit:
            self._post(aid, deposit, "deposit", "transfer", "Opening deposit", customer_id)
        return dict(self.db.get("bank_accounts", aid))

    @tool(destructive=True, idempotent=True)
    def close_bank_account(self, account_id: AccountId) -> dict[str, Any]:
        """Close an account. Its balance must be exactly 0 (transfer the money out first)."""
        a = self._account(account_id)
        if a["status"] == "closed":
            return dict(a)
        if a["balance"] != 0:
            raise conflict(
                f"account {account_id} still holds {a['balance']} USD; move it out before closing."
            )
        acct = self.db.edit("bank_accounts", account_id)
        acct["status"] = "closed"
        return dict(acct)

    @tool(idempotent=True)
    def set_bank_account_frozen(
        self,
        account_id: AccountId,
        frozen: Annotated[bool, Field(description="True: freeze (no money moves); False: unfreeze.")],
    ) -> dict[str, Any]:
        """Freeze or unfreeze an account (a closed account cannot change)."""
        a = self._account(account_id)
        if a["status"] == "closed":
            raise conflict(f"account {account_id} is closed.")
        acct = self.db.edit("bank_accounts", account_id)
        acct["status"] = "frozen" if frozen else "open"
        return dict(acct)

    # -- transactions --------------------------------------------------------------------------
    @tool(read_only=True)
    def list_bank_transactions(
        self,
        account_id: AccountId,
        start_date: Day = None,
        end_date: Day = None,
        kind: Annotated[Kind | None, Field(description="Only this kind of transaction.")] = None,
        category: Annotated[str | None, Field(description="Only this category, e.g. 'groceries'.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """An account's transactions between two days (inclusive), newest first. Debits are negative."""
        self._account(account_id)
        check_window(start_date, end_date)
        rows = [
            t
            for t in self._txs(account_id)
            if (start_date is None or t["date"] >= start_date)
            and (end_date is None or t["date"] <= end_date)
            and (kind is None or t["kind"] == kind)
            and (category is None or t["category"] == category.lower())
        ]
        rows.sort(key=lambda t: (t["date"], t["id"]), reverse=True)
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_bank_transaction(
        self, transaction_id: Annotated[str, Field(description="Transaction id, e.g. 'btx-0007'.")]
    ) -> dict[str, Any]:
        """One bank transaction."""
        return dict(self.require("bank_transactions", transaction_id, "Transaction",
                                 "Use list_bank_transactions to find ids."))  # fmt: skip

    @tool(read_only=True)
    def search_bank_transactions(
        self,
        query: Annotated[str, Field(min_length=2, description="Text in the description or counterparty.")],
        customer_id: Annotated[str | None, Field(description="Only this customer's accounts.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Find transactions across accounts by merchant or description text, newest first."""
        owned = None
        if customer_id is not None:
            self._customer(customer_id)
            owned = {a["id"] for a in self.db.values("bank_accounts") if a["customer_id"] == customer_id}
        rows = [
            t
            for t in self._txs()
            if (owned is None or t["account_id"] in owned)
            and (matches(t["description"], query) or matches(t["counterparty"], query))
        ]
        rows.sort(key=lambda t: (t["date"], t["id"]), reverse=True)
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def bank_spending_summary(
        self, account_id: AccountId, start_date: Day = None, end_date: Day = None
    ) -> dict[str, Any]:
        """Money in, money out and spending per category of an account between two days (inclusive)."""
        self._account(account_id)
        check_window(start_date, end_date)
        rows = [t for t in self._txs(account_id) if (start_date is None or t["date"] >= start_date)
                and (end_date is None or t["date"] <= end_date)]  # fmt: skip
        spent: dict[str, float] = defaultdict(float)
        for t in rows:
            if t["amount"] < 0:
                spent[t["category"]] += -t["amount"]
        return {
            "account_id": account_id,
            "from": start_date,
            "to": end_date,
            "money_in": round(sum(t["amount"] for t in rows if t["amount"] > 0), 2),
            "money_out": round(-sum(t["amount"] for t in rows if t["amount"] < 0), 2),
            "by_category": {k: round(v, 2) for k, v in sorted(spent.items(), key=lambda kv: -kv[1])},
            "transactions": len(rows),
        }

    @tool(read_only=True)
    def get_bank_statement(
        self,
        account_id: AccountId,
        month: Annotated[str, Field(description="Month, YYYY-MM (the last 60 days are on record).")],
    ) -> dict[str, Any]:
        """A monthly statement: opening and closing balance, totals in and out, and the transactions."""
        a = self._account(account_id)
        check_month(month)
        txs = self._txs(account_id)
        later = sum(t["amount"] for t in txs if t["date"][:7] > month)
        inside = sorted((t for t in txs if t["date"][:7] == month), key=lambda t: (t["date"], t["id"]))
        closing = round(a["balance"] - later, 2)
        return {"account_id": account_id, "month": month,
                "opening_balance": round(closing - sum(t["amount"] for t in inside), 2), "closing_balance": closing,
                "money_in": round(sum(t["amount"] for t in inside if t["amount"] > 0), 2),
                "money_out": round(-sum(t["amount"] for t in inside if t["amount"] < 0), 2),
                "transactions": inside}  # fmt: skip

    # -- moving money --------------------------------------------------------------------------
    @tool(idempotent=False)
    def deposit_to_bank_account(
        self,
        account_id: AccountId,
        amount: Amount,
        description: Annotated[str, Field(description="What the deposit is.")] = "Deposit",
    ) -> dict[str, Any]:
        """Deposit money into an open account. Returns the transaction and the new balance."""
        return self._post(account_id, _cents(amount), "deposit", "transfer", description, "cash")

    @tool(idempotent=False)
    def withdraw_from_bank_account(
        self,
        account_id: AccountId,
        amount: Amount,
        description: Annotated[str, Field(description="What the withdrawal is.")] = "Withdrawal",
    ) -> dict[str, Any]:
        """Withdraw money from an open account (the overdraft limit applies)."""
        return self._post(account_id, -_cents(amount), "withdrawal", "cash", description, "cash")

    @tool(idempotent=False)
    def transfer_between_bank_accounts(
        self,
        from_account_id: Annotated[str, Field(description="Account to debit, e.g. 'ba-1001'.")],
        to_account_id: Annotated[str, Field(description="Account to credit, e.g. 'ba-1002'.")],
        amount: Amount,
        memo: Annotated[str, Field(description="Note shown on both statements.")] = "",
    ) -> dict[str, Any]:
        """Move money between two bank accounts (both must be open). Books one transaction on each."""
        if from_account_id == to_account_id:
            raise invalid("from_account_id and to_account_id are the same account.")
        self._usable(to_account_id)
        out = self._post(from_account_id, -_cents(amount), "transfer_out", "transfer",
                         memo or f"Transfer to {to_account_id}", to_account_id)  # fmt: skip
        into = self._post(to_account_id, amount, "transfer_in", "transfer",
                          memo or f"Transfer from {from_account_id}", from_account_id)  # fmt: skip
        return {"debit": out, "credit": into}

    # -- payees --------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_bank_payees(
        self,
        customer_id: Annotated[str, Field(description="The customer whose saved payees to list.")],
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """A customer's saved payees (people and companies they pay)."""
        self._customer(customer_id)
        rows = [p for p in self.db.values("bank_payees") if p["customer_id"] == customer_id]
        return paginate(sorted(rows, key=lambda p: p["id"]), limit, cursor)

    @tool(idempotent=False)
    def add_bank_payee(
        self,
        customer_id: Annotated[str, Field(description="Customer who saves the payee.")],
        name: Annotated[str, Field(min_length=2, description="Payee name, e.g. a company.")],
        account_number: Annotated[str, Field(min_length=6, description="The payee's account number.")],
    ) -> dict[str, Any]:
        """Save a new payee for a customer (the same name twice is refused)."""
        self._customer(customer_id)
        for p in self.db.values("bank_payees"):
            if p["customer_id"] == customer_id and p["name"].lower() == name.lower():
                raise conflict(f"{customer_id} already has payee '{p['name']}' ({p['id']}).")
        pid = self.next_id("bank_payees", "bpy-")
        payee = {"id": pid, "customer_id": customer_id, "name": name, "account_number": account_number}
        self.db.put("bank_payees", pid, payee)
        return payee

    @tool(idempotent=False)
    def pay_bank_payee(
        self,
        account_id: AccountId,
        payee_id: Annotated[str, Field(description="Saved payee id, e.g. 'bpy-004'.")],
        amount: Amount,
        memo: Annotated[str, Field(description="Reference shown on the payment.")] = "",
    ) -> dict[str, Any]:
        """Pay a saved payee from one of the payee owner's accounts."""
        payee = self.require("bank_payees", payee_id, "Payee", "Use list_bank_payees to find payee ids.")
        acct = self._account(account_id)
        if payee["customer_id"] != acct["customer_id"]:
            raise invalid(f"payee {payee_id} belongs to {payee['customer_id']}, account {account_id} to "
                          f"{acct['customer_id']}; pay from the payee owner's account.")  # fmt: skip
        return self._post(account_id, -_cents(amount), "payment", "bills", memo or f"Payment to {payee['name']}",
                          payee["name"])  # fmt: skip

    # -- cards ---------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_bank_cards(
        self,
        customer_id: Annotated[str | None, Field(description="Only this customer's cards.")] = None,
        status: Annotated[Literal["active", "blocked"] | None, Field(description="Only this status.")] = None,
    ) -> dict[str, Any]:
        """Debit cards with their account, last four digits, status and daily limit."""
        rows = [c for c in self.db.values("bank_cards") if (customer_id is None or c["customer_id"] == customer_id)
                and (status is None or c["status"] == status)]  # fmt: skip
        return {"cards": sorted(rows, key=lambda c: c["id"]), "total": len(rows)}

    @tool(idempotent=True)
    def set_bank_card_status(
        self,
        card_id: Annotated[str, Field(description="Card id, e.g. 'card-003'.")],
        status: Annotated[Literal["active", "blocked"], Field(description="'blocked' stops the card.")],
    ) -> dict[str, Any]:
        """Block a card (lost or stolen) or reactivate it."""
        self.require("bank_cards", card_id, "Card", "Use list_bank_cards to find card ids.")
        card = self.db.edit("bank_cards", card_id)
        card["status"] = status
        return dict(card)
