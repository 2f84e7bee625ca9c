"""Email: the team mailbox (inbox, sent, archive, trash), threads, labels."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.servers.base import (
    Cursor,
    DomainServer,
    Limit,
    conflict,
    invalid,
    matches,
    not_found,
    paginate,
    tool,
)
from toolkit.envs.world import NOW_ISO

Folder = Literal["inbox", "sent", "archive", "trash"]
EmailId = Annotated[str, Field(description="Email id, e.g. 'm-001'.")]
MAILBOX = "support@northwind.example"
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _summary(m: dict[str, Any]) -> dict[str, Any]:
    return {k: m[k] for k in ("id", "thread_id", "from", "to", "subject", "date", "folder", "read", "labels")}


class Email(DomainServer):
    name = "email"
    description = "The team mailbox: list, search, read, send, reply, forward, label, move and delete emails."

    def _email(self, email_id: str) -> dict[str, Any]:
        return self.require(
            "emails", email_id, "Email", "Use list_emails or search_emails to find email ids."
        )

    def _check(self, addresses: list[str]) -> None:
        bad = [a for a in addresses if not _EMAIL.match(a)]
        if bad:
            raise invalid(f"not valid email addresses: {bad}.")

    def _new(
        self, to: list[str], subject: str, body: str, cc: list[str], thread_id: str | None
    ) -> dict[str, Any]:
        mid = self.next_id("emails", "m-")
        thread = thread_id or f"th-{mid[2:]}"
        rec = {"id": mid, "thread_id": thread, "from": MAILBOX, "to": to, "cc": cc, "subject": subject,
               "body": body, "date": NOW_ISO, "folder": "sent", "read": True, "labels": []}  # fmt: skip
        self.db.put("emails", mid, rec)
        return rec

    @tool(read_only=True)
    def list_emails(
        self,
        folder: Annotated[Folder, Field(description="Mailbox folder.")] = "inbox",
        unread_only: Annotated[bool, Field(description="Only unread emails.")] = False,
        label: Annotated[str | None, Field(description="Only emails with this label.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List emails in a folder, newest first."""
        rows = [
            _summary(m)
            for m in self.db.values("emails")
            if m["folder"] == folder
            and (not unread_only or not m["read"])
            and (label is None or label in m["labels"])
        ]
        rows.sort(key=lambda m: (m["date"], m["id"]), reverse=True)
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def search_emails(
        self,
        query: Annotated[str | None, Field(description="Text to find in subject or body.")] = None,
        sender: Annotated[str | None, Field(description="Part of the sender's address.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Search all folders by text and sender, newest first."""
        if not query and not sender:
            raise invalid("pass query and/or sender.")
        rows = [
            _summary(m)
            for m in self.db.values("emails")
            if (matches(m["subject"], query) or matches(m["body"], query)) and matches(m["from"], sender)
        ]
        rows.sort(key=lambda m: (m["date"], m["id"]), reverse=True)
        return paginate(rows, limit, cursor)

    @tool(idempotent=True)
    def read_email(self, email_id: EmailId) -> dict[str, Any]:
        """Open an email (full body) and mark it read."""
        m = self._email(email_id)
        if not m["read"]:
            m = self.db.edit("emails", email_id)
            m["read"] = True
        return m

    @tool(read_only=True)
    def get_thread(self, thread_id: Annotated[str, Field(description="Thread id, e.g. 'th-001'.")]) -> dict:
        """All emails of a thread, oldest first."""
        rows = sorted(
            (m for m in self.db.values("emails") if m["thread_id"] == thread_id), key=lambda m: m["date"]
        )
        if not rows:
            raise not_found("Thread", thread_id, {m["thread_id"] for m in self.db.values("emails")})
        return {"thread_id": thread_id, "emails": rows}

    @tool(idempotent=False)
    def send_email(
        self,
        to: Annotated[list[str], Field(min_length=1, description="Recipient addresses.")],
        subject: Annotated[str, Field(min_length=1, description="Subject line.")],
        body: Annotated[str, Field(description="Message text.")],
        cc: Annotated[list[str] | None, Field(description="Copy addresses.")] = None,
    ) -> dict[str, Any]:
        """Send a new email from the team mailbox."""
        self._check(to + (cc or []))
        return _summary(self._new(to, subject, body, cc or [], None))

    @tool(idempotent=False)
    def reply_to_email(
        self, email_id: EmailId, body: Annotated[str, Field(description="Reply text.")]
    ) -> dict:
        """Reply to the sender of an email, in the same thread."""
        m = self._email(email_id)
        if m["from"].endswith("@" + MAILBOX.split("@")[1]):
            raise invalid(f"{email_id} was sent by our team; reply to an incoming email or use send_email.")
        subject = m["subject"] if m["subject"].startswith("Re:") else f"Re: {m['subject']}"
        return _summary(self._new([m["from"]], subject, body, [], m["thread_id"]))

    @tool(idempotent=False)
    def forward_email(
        self,
        email_id: EmailId,
        to: Annotated[list[str], Field(min_length=1, description="Recipient addresses.")],
        note: Annotated[str, Field(description="Text added above the forwarded message.")] = "",
    ) -> dict[str, Any]:
        """Forward an email to other addresses."""
        m = self._email(email_id)
        self._check(to)
        body = f"{note}\n\n---------- Forwarded message ----------\nFrom: {m['from']}\n{m['body']}".lstrip()
        return _summary(self._new(to, f"Fwd: {m['subject']}", body, [], None))

    @tool(idempotent=True)
    def mark_email(
        self, email_id: EmailId, read: Annotated[bool, Field(description="True: mark read; False: unread.")]
    ) -> dict[str, Any]:
        """Mark an email read or unread."""
        self._email(email_id)
        m = self.db.edit("emails", email_id)
        m["read"] = read
        return _summary(m)

    @tool(idempotent=True)
    def label_email(
        self,
        email_id: EmailId,
        label: Annotated[
            str, Field(pattern=r"^[a-z0-9-]{1,24}$", description="Label, lowercase, e.g. 'billing'.")
        ],
        remove: Annotated[bool, Field(description="True to remove the label instead of adding it.")] = False,
    ) -> dict[str, Any]:
        """Add or remove a label on an email."""
        cur = self._email(email_id)
        if remove and label not in cur["labels"]:
            raise invalid(f"{email_id} has no label '{label}'; its labels are {cur['labels']}.")
        m = self.db.edit("emails", email_id)
        m["labels"] = sorted(set(m["labels"]) - {label}) if remove else sorted({*m["labels"], label})
        return _summary(m)

    @tool(idempotent=True)
    def move_email(
        self, email_id: EmailId, folder: Annotated[Folder, Field(description="Destination folder.")]
    ) -> dict[str, Any]:
        """Move an email to another folder (e.g. archive)."""
        self._email(email_id)
        m = self.db.edit("emails", email_id)
        m["folder"] = folder
        return _summary(m)

    @tool(destructive=True, idempotent=True)
    def delete_email(
        self,
        email_id: EmailId,
        permanent: Annotated[
            bool, Field(description="Delete for good (only for emails already in trash).")
        ] = False,
    ) -> dict[str, Any]:
        """Move an email to trash, or permanently delete an email that is already in trash."""
        m = self._email(email_id)
        if permanent:
            if m["folder"] != "trash":
                raise conflict(
                    f"{email_id} is in '{m['folder']}'; move it to trash before deleting permanently."
                )
            self.db.delete("emails", email_id)
            return {"deleted": email_id}
        return self.move_email(email_id, "trash")

    @tool(read_only=True)
    def list_email_labels(self) -> dict[str, Any]:
        """Every label in use, with how many emails carry it."""
        counts: dict[str, int] = {}
        for m in self.db.values("emails"):
            for lab in m["labels"]:
                counts[lab] = counts.get(lab, 0) + 1
        return {"labels": dict(sorted(counts.items()))}
