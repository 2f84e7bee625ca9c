"""Team chat (Slack-like): channels with members, messages, reactions."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import Field

from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, matches, paginate, tool
from toolkit.envs.world import NOW_ISO

ChannelId = Annotated[str, Field(description="Channel id, e.g. 'ch-support'.")]
StaffId = Annotated[str, Field(description="Staff id, e.g. 'st-001'.")]


class Chat(DomainServer):
    name = "chat"
    description = "Team chat: channels, members, posting and searching messages, reactions."

    def _channel(self, channel_id: str) -> dict[str, Any]:
        return self.require("channels", channel_id, "Channel", "Use list_channels to find channel ids.")

    def _member(self, channel_id: str, staff_id: str) -> dict[str, Any]:
        ch = self._channel(channel_id)
        self.require("staff", staff_id, "Staff member", "Use search_staff to find staff ids.")
        if staff_id not in ch["member_ids"]:
            raise conflict(f"{staff_id} is not a member of {channel_id}; use invite_to_channel first.")
        return ch

    @tool(read_only=True)
    def list_channels(self) -> dict[str, Any]:
        """All channels with topic and member count."""
        return {"channels": [{"id": c["id"], "name": c["name"], "topic": c["topic"], "members": len(c["member_ids"])}
                             for c in self.db.values("channels")]}  # fmt: skip

    @tool(read_only=True)
    def read_channel(self, channel_id: ChannelId, limit: Limit = 10, cursor: Cursor = None) -> dict[str, Any]:
        """Messages of a channel, newest first."""
        self._channel(channel_id)
        rows = sorted((m for m in self.db.values("messages") if m["channel_id"] == channel_id),
                      key=lambda m: (m["ts"], m["id"]), reverse=True)  # fmt: skip
        return {"channel_id": channel_id, **paginate(rows, limit, cursor)}

    @tool(idempotent=False)
    def post_message(
        self,
        channel_id: ChannelId,
        text: Annotated[str, Field(min_length=1, max_length=4000, description="Message text.")],
        author_id: Annotated[StaffId, Field(description="Staff id of the author (must be a member).")],
    ) -> dict[str, Any]:
        """Post a message to a channel as a member."""
        self._member(channel_id, author_id)
        mid = self.next_id("messages", "msg-")
        rec = {"id": mid, "channel_id": channel_id, "author_id": author_id, "text": text, "ts": NOW_ISO,
               "reactions": {}}  # fmt: skip
        self.db.put("messages", mid, rec)
        return rec

    @tool(read_only=True)
    def search_chat(
        self,
        query: Annotated[str, Field(min_length=1, description="Text to find.")],
        channel_id: Annotated[str | None, Field(description="Only this channel.")] = None,
        author_id: Annotated[str | None, Field(description="Only messages by this staff id.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Search messages across channels, newest first."""
        rows = sorted(
            (m for m in self.db.values("messages") if matches(m["text"], query)
             and (channel_id is None or m["channel_id"] == channel_id)
             and (author_id is None or m["author_id"] == author_id)),
            key=lambda m: (m["ts"], m["id"]), reverse=True)  # fmt: skip
        return paginate(rows, limit, cursor)

    @tool(idempotent=True)
    def add_reaction(
        self,
        message_id: Annotated[str, Field(description="Message id, e.g. 'msg-001'.")],
        emoji: Annotated[
            str, Field(pattern=r"^[a-z0-9_+-]{1,32}$", description="Emoji name, e.g. 'thumbsup'.")
        ],
        staff_id: StaffId,
    ) -> dict[str, Any]:
        """React to a message with an emoji."""
        m = self.require("messages", message_id, "Message", "Use read_channel or search_chat to find ids.")
        self._member(m["channel_id"], staff_id)
        m = self.db.edit("messages", message_id)
        m["reactions"][emoji] = sorted({*m["reactions"].get(emoji, []), staff_id})
        return m

    @tool(destructive=True, idempotent=True)
    def remove_chat_message(
        self, message_id: Annotated[str, Field(description="Message id, e.g. 'msg-001'.")]
    ) -> dict[str, Any]:
        """Delete a chat message."""
        self.require("messages", message_id, "Message", "Use read_channel or search_chat to find ids.")
        self.db.delete("messages", message_id)
        return {"deleted": message_id}

    @tool(idempotent=False)
    def create_channel(
        self,
        name: Annotated[str, Field(description="Lowercase name, letters/digits/dashes, e.g. 'launch-2025'.")],
        topic: Annotated[str, Field(description="What the channel is for.")],
        member_ids: Annotated[list[str], Field(min_length=1, description="Staff ids of the first members.")],
    ) -> dict[str, Any]:
        """Create a channel."""
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]{1,30}", name):
            raise invalid(f"channel name '{name}' must be 2-31 lowercase letters, digits or dashes.")
        if any(c["name"] == name for c in self.db.values("channels")):
            raise conflict(f"a channel named '{name}' already exists.")
        for s in member_ids:
            self.require("staff", s, "Staff member", "Use search_staff to find staff ids.")
        cid = f"ch-{name}"
        rec = {"id": cid, "name": name, "topic": topic, "member_ids": sorted(set(member_ids))}
        self.db.put("channels", cid, rec)
        return rec

    @tool(idempotent=True)
    def invite_to_channel(self, channel_id: ChannelId, staff_id: StaffId) -> dict[str, Any]:
        """Add a staff member to a channel."""
        ch = self._channel(channel_id)
        staff = self.require("staff", staff_id, "Staff member", "Use search_staff to find staff ids.")
        if not staff["active"]:
            raise conflict(f"{staff_id} is inactive and cannot join channels.")
        if staff_id not in ch["member_ids"]:
            ch = self.db.edit("channels", channel_id)
            ch["member_ids"] = sorted([*ch["member_ids"], staff_id])
        return ch

    @tool(idempotent=True)
    def leave_channel(self, channel_id: ChannelId, staff_id: StaffId) -> dict[str, Any]:
        """Remove a staff member from a channel."""
        self._member(channel_id, staff_id)
        ch = self.db.edit("channels", channel_id)
        ch["member_ids"] = [m for m in ch["member_ids"] if m != staff_id]
        return ch

    @tool(idempotent=True)
    def set_channel_topic(
        self, channel_id: ChannelId, topic: Annotated[str, Field(max_length=250, description="New topic.")]
    ) -> dict[str, Any]:
        """Change a channel's topic."""
        self._channel(channel_id)
        ch = self.db.edit("channels", channel_id)
        ch["topic"] = topic
        return ch
