"""A sandboxed virtual file system stored in the world state (collection ``files``, keyed by path).

Nothing here touches the real disk. Every path goes through ``resolve``: it is taken relative to the
workspace root ``/``, ``..`` that would climb above the root is refused (not clamped, so the model
learns), symlinks are followed with a hop limit, and a symlink whose target leaves the root is refused.
"""

from __future__ import annotations

import fnmatch
import posixpath
from typing import Annotated, Any

from pydantic import Field

from toolkit.envs.servers.base import (
    Cursor,
    DomainServer,
    Limit,
    ToolError,
    conflict,
    invalid,
    not_found,
    paginate,
    tool,
)
from toolkit.envs.world import NOW_ISO

PathArg = Annotated[str, Field(description="Path inside the workspace, e.g. '/docs/README.md'.")]
MAX_HOPS = 16
MAX_FILE_CHARS = 200_000


class SandboxError(ToolError):
    """A path that tries to leave the workspace root."""


class Filesystem(DomainServer):
    name = "filesystem"
    description = "A sandboxed workspace file system: list, read, write, move, copy, search and delete files."

    # -- path resolution (the sandbox) -----------------------------------------------------------
    def resolve(self, path: str, follow_last: bool = True) -> str:
        """Canonical absolute path inside the root, symlinks followed; SandboxError if it escapes."""
        if not isinstance(path, str) or not path.strip():
            raise invalid("path is empty.")
        if "\x00" in path or "\\" in path:
            raise invalid(f"path '{path}' contains a NUL byte or a backslash; use '/' separators.")
        pending = path.split("/")
        parts: list[str] = []
        hops = 0
        while pending:
            seg = pending.pop(0)
            if seg in ("", "."):
                continue
            if seg == "..":
                if not parts:
                    raise SandboxError(f"Access denied: '{path}' points outside the workspace root '/'.")
                parts.pop()
                continue
            parts.append(seg)
            current = "/" + "/".join(parts)
            rec = self.db.get("files", current)
            if rec is not None and rec["type"] == "symlink" and (pending or follow_last):
                hops += 1
                if hops > MAX_HOPS:
                    raise invalid(f"too many levels of symbolic links resolving '{path}'.")
                target = rec["target"]
                parts.pop()
                if target.startswith("/"):
                    parts = []
                # The target is resolved segment by segment like the rest: '..' above root is refused.
                pending = target.split("/") + pending
        return "/" + "/".join(parts)

    def _node(self, path: str, follow_last: bool = True) -> tuple[str, dict[str, Any] | None]:
        real = self.resolve(path, follow_last)
        if real == "/":
            return real, {"path": "/", "type": "dir", "content": None, "modified": NOW_ISO}
        return real, self.db.get("files", real)

    def _existing(self, path: str, follow_last: bool = True) -> tuple[str, dict[str, Any]]:
        real, node = self._node(path, follow_last)
        if node is None:
            parent = posixpath.dirname(real)
            siblings = [p for p in self.db.collection("files") if posixpath.dirname(p) == parent]
            raise not_found("Path", path, siblings, f"Use list_directory('{parent}') to see what is there.")
        return real, node

    def _children(self, real: str) -> list[str]:
        prefix = real.rstrip("/") + "/"
        return sorted(
            p for p in self.db.collection("files") if p.startswith(prefix) and "/" not in p[len(prefix) :]
        )

    def _parent_dir(self, real: str) -> None:
        parent = posixpath.dirname(real)
        if parent != "/":
            node = self.db.get("files", parent)
            if node is None:
                raise invalid(f"parent directory '{parent}' does not exist; create it with make_directory.")
            if node["type"] != "dir":
                raise invalid(f"'{parent}' is not a directory.")

    @staticmethod
    def _info(node: dict[str, Any]) -> dict[str, Any]:
        info = {"path": node["path"], "type": node["type"], "modified": node["modified"]}
        if node["type"] == "file":
            info["size"] = len(node["content"])
        if node["type"] == "symlink":
            info["target"] = node["target"]
        return info

    # -- tools ------------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_directory(self, path: PathArg = "/", limit: Limit = 50, cursor: Cursor = None) -> dict[str, Any]:
        """List the entries of a directory (name, type, size)."""
        real, node = self._existing(path)
        if node["type"] != "dir":
            raise invalid(f"'{path}' is a {node['type']}, not a directory; use read_file.")
        rows = [self._info(self.db.get("files", p)) for p in self._children(real)]
        return {"path": real, **paginate(rows, limit, cursor)}

    @tool(read_only=True)
    def read_file(
        self,
        path: PathArg,
        offset: Annotated[int, Field(ge=0, description="First character to return.")] = 0,
        max_chars: Annotated[int, Field(ge=1, le=20000, description="Maximum characters to return.")] = 4000,
    ) -> dict[str, Any]:
        """Read a text file (a window of it for long files)."""
        real, node = self._existing(path)
        if node["type"] != "file":
            raise invalid(f"'{path}' is a directory; use list_directory.")
        text = node["content"]
        chunk = text[offset : offset + max_chars]
        return {
            "path": real,
            "content": chunk,
            "size": len(text),
            "truncated": offset + len(chunk) < len(text),
        }

    @tool(idempotent=True)
    def write_file(
        self,
        path: PathArg,
        content: Annotated[str, Field(description="Full new text of the file.")],
        overwrite: Annotated[bool, Field(description="Allow replacing an existing file.")] = False,
    ) -> dict[str, Any]:
        """Create a text file, or replace one when overwrite is true."""
        if len(content) > MAX_FILE_CHARS:
            raise invalid(f"content longer than {MAX_FILE_CHARS} characters.")
        real, node = self._node(path)
        if node is not None:
            if node["type"] != "file":
                raise conflict(f"'{real}' is a {node['type']}.")
            if not overwrite:
                raise conflict(
                    f"'{real}' already exists; pass overwrite=true to replace it or use append_to_file."
                )
        self._parent_dir(real)
        self.db.put("files", real, {"path": real, "type": "file", "content": content, "modified": NOW_ISO})
        return {"path": real, "size": len(content), "created": node is None}

    @tool(idempotent=False)
    def append_to_file(
        self, path: PathArg, content: Annotated[str, Field(description="Text to append.")]
    ) -> dict:
        """Append text to the end of an existing file."""
        real, node = self._existing(path)
        if node["type"] != "file":
            raise invalid(f"'{path}' is a directory.")
        if len(node["content"]) + len(content) > MAX_FILE_CHARS:
            raise invalid(f"the file would exceed {MAX_FILE_CHARS} characters.")
        f = self.db.edit("files", real)
        f["content"] += content
        f["modified"] = NOW_ISO
        return {"path": real, "size": len(f["content"])}

    @tool(idempotent=True)
    def make_directory(
        self,
        path: PathArg,
        parents: Annotated[bool, Field(description="Also create missing parents.")] = False,
    ) -> dict[str, Any]:
        """Create a directory."""
        real, node = self._node(path)
        if node is not None:
            if node["type"] == "dir":
                return {"path": real, "created": False}
            raise conflict(f"'{real}' exists and is a {node['type']}.")
        todo = [real]
        if parents:
            p = posixpath.dirname(real)
            while p != "/" and self.db.get("files", p) is None:
                todo.insert(0, p)
                p = posixpath.dirname(p)
        self._parent_dir(todo[0])
        for d in todo:
            self.db.put("files", d, {"path": d, "type": "dir", "content": None, "modified": NOW_ISO})
        return {"path": real, "created": True}

    def _copy_tree(self, src: str, dst: str, move: bool) -> list[str]:
        moved = [p for p in self.db.collection("files") if p == src or p.startswith(src + "/")]
        for p in sorted(moved):
            new = dst + p[len(src) :]
            rec = dict(self.db.get("files", p), path=new, modified=NOW_ISO)
            self.db.put("files", new, rec)
        if move:
            for p in moved:
                self.db.delete("files", p)
        return moved

    @tool(idempotent=False)
    def move_path(self, source: PathArg, destination: PathArg) -> dict[str, Any]:
        """Move or rename a file or directory (the destination must not exist)."""
        src, _ = self._existing(source, follow_last=False)
        dst, node = self._node(destination, follow_last=False)
        if node is not None:
            raise conflict(f"'{dst}' already exists.")
        if src == "/" or dst == src or dst.startswith(src + "/"):
            raise invalid(f"cannot move '{src}' into itself.")
        self._parent_dir(dst)
        n = len(self._copy_tree(src, dst, move=True))
        return {"from": src, "to": dst, "entries": n}

    @tool(idempotent=False)
    def copy_file(self, source: PathArg, destination: PathArg) -> dict[str, Any]:
        """Copy a file (not a directory) to a new path."""
        src, node = self._existing(source)
        if node["type"] != "file":
            raise invalid(f"'{source}' is a directory; only files can be copied.")
        dst, existing = self._node(destination)
        if existing is not None:
            raise conflict(f"'{dst}' already exists.")
        self._parent_dir(dst)
        self.db.put(
            "files", dst, {"path": dst, "type": "file", "content": node["content"], "modified": NOW_ISO}
        )
        return {"from": src, "to": dst}

    @tool(destructive=True, idempotent=True)
    def delete_path(
        self,
        path: PathArg,
        recursive: Annotated[bool, Field(description="Required to delete a non-empty directory.")] = False,
    ) -> dict[str, Any]:
        """Delete a file, a symlink, or a directory (non-empty ones only with recursive=true)."""
        real, node = self._existing(path, follow_last=False)
        if real == "/":
            raise invalid("the workspace root cannot be deleted.")
        if node["type"] == "dir" and self._children(real) and not recursive:
            raise conflict(f"'{real}' is not empty; pass recursive=true to delete it with its contents.")
        gone = [p for p in self.db.collection("files") if p == real or p.startswith(real + "/")]
        for p in gone:
            self.db.delete("files", p)
        return {"deleted": sorted(gone)}

    @tool(read_only=True)
    def search_files(
        self,
        pattern: Annotated[str, Field(description="Glob on the file name, e.g. '*.md'.")],
        path: PathArg = "/",
        limit: Limit = 50,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Find files and directories under a path whose name matches a glob pattern."""
        real, _ = self._existing(path)
        prefix = real.rstrip("/") + "/"
        rows = sorted(
            p
            for p in self.db.collection("files")
            if p.startswith(prefix) and fnmatch.fnmatch(posixpath.basename(p), pattern)
        )
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def find_in_files(
        self,
        text: Annotated[str, Field(min_length=1, description="Text to look for (case-insensitive).")],
        path: PathArg = "/",
    ) -> dict[str, Any]:
        """Lines containing a text in the files under a path: [{path, line, text}]."""
        real, _ = self._existing(path)
        prefix = real.rstrip("/") + "/"
        hits = []
        for p in sorted(self.db.collection("files")):
            node = self.db.get("files", p)
            if node["type"] != "file" or not (p.startswith(prefix) or p == real):
                continue
            for i, line in enumerate(node["content"].splitlines(), start=1):
                if text.lower() in line.lower():
                    hits.append({"path": p, "line": i, "text": line[:200]})
        return {"matches": hits[:100], "count": len(hits)}

    @tool(read_only=True)
    def file_info(self, path: PathArg) -> dict[str, Any]:
        """Type, size, modification time (and target, for a symlink) of a path."""
        real, node = self._existing(path, follow_last=False)
        return {**self._info(node), "path": real}

    @tool(idempotent=False)
    def create_symlink(
        self,
        path: PathArg,
        target: Annotated[str, Field(description="Existing path inside the workspace the link points to.")],
    ) -> dict[str, Any]:
        """Create a symbolic link at path pointing to target (both inside the workspace)."""
        real, node = self._node(path, follow_last=False)
        if node is not None:
            raise conflict(f"'{real}' already exists.")
        self._parent_dir(real)
        base = posixpath.dirname(real)
        resolved, tnode = self._node(target if target.startswith("/") else posixpath.join(base, target))
        if tnode is None:
            raise invalid(f"link target '{target}' does not exist.")
        self.db.put("files", real, {"path": real, "type": "symlink", "target": resolved, "content": None,
                                    "modified": NOW_ISO})  # fmt: skip
        return {"path": real, "target": resolved}
