"""A hand-written stdio 'MCP server' that answers tools/call with malformed JSON-RPC (fixture).

It speaks just enough of the protocol (initialize, tools/list, method-not-found for the rest) for a
client to connect, then answers every ``tools/call`` according to the mode in argv[1]:

- ``garbage``: a line that is not JSON;
- ``wrong_id``: a well-formed response to a request id that was never sent;
- ``bad_result``: a response whose result does not match the CallToolResult schema;
- ``bad_error``: an ``error`` member that is a string, not an object;
- ``not_jsonrpc``: a JSON object without ``jsonrpc``/``id``;
- ``huge_line``: one 8 MB line of JSON garbage.
"""

import json
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "garbage"
TOOL = {"name": "get", "description": "Get a value.", "inputSchema": {"type": "object", "properties": {}}}


def send(obj) -> None:
    sys.stdout.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
    sys.stdout.flush()


def broken_reply(req_id) -> None:
    if MODE == "garbage":
        send("this is {not json at all")
    elif MODE == "wrong_id":
        send({"jsonrpc": "2.0", "id": 987654, "result": {"content": [{"type": "text", "text": "x"}]}})
    elif MODE == "bad_result":
        send({"jsonrpc": "2.0", "id": req_id, "result": {"content": "should be a list", "isError": "maybe"}})
    elif MODE == "bad_error":
        send({"jsonrpc": "2.0", "id": req_id, "error": "something went wrong"})
    elif MODE == "not_jsonrpc":
        send({"hello": "world", "result": 1})
    elif MODE == "huge_line":
        send('{"jsonrpc": "2.0", "id": ' + str(req_id) + ', "result": "' + "x" * 8_000_000)


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if "id" not in msg or "method" not in msg:
        continue  # notifications and responses
    method, req_id = msg["method"], msg["id"]
    if method == "initialize":
        version = msg.get("params", {}).get("protocolVersion", "2025-06-18")
        send(
            {
                "jsonrpc": "2.0",
                "id": req_id,
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "malformed", "version": "0"},
                },
            }
        )
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": req_id, "result": {"tools": [TOOL]}})
    elif method == "tools/call":
        broken_reply(req_id)
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": req_id, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": req_id, "error": {"code": -32601, "message": f"no method {method}"}})
