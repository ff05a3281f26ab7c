"""BotCraft's own schemathesis check, loaded through SCHEMATHESIS_HOOKS.

With a chat key (BOTCRAFT_ST_ROLE=chat) no route outside the chat set answers 2xx: an
operation is a chat route when the OpenAPI document marks it `x-botcraft-access: chat`, and
public when it says `security: []`. Everything else is an admin route.
"""
import os

import schemathesis


@schemathesis.check
def chat_key_never_passes_an_admin_route(ctx, response, case):
    if os.environ.get("BOTCRAFT_ST_ROLE") != "chat":
        return
    operation = case.operation.definition.raw
    chat_route = operation.get("x-botcraft-access") == "chat"
    public = operation.get("security") == []
    if not chat_route and not public and 200 <= response.status_code < 300:
        raise AssertionError(
            f"the chat key got {response.status_code} on the admin route "
            f"{case.method} {case.operation.path}"
        )
