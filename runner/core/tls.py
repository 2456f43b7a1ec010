"""One TLS context per process, for every HTTP client the runner builds.

httpx builds a context for each new client and loads the whole CA bundle into it: about 25 ms of
CPU a client. The runner builds a client per backend and per health wait, and Strands builds one
per model call of the agent (its connections belong to one event loop), so a graded run paid that
hundreds of times. A context is safe to share between clients and threads.
"""

from __future__ import annotations

import functools
import ssl


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's own default (certifi's CA bundle, the environment's SSL_CERT_FILE/SSL_CERT_DIR), built once."""
    import httpx

    return httpx.create_ssl_context()
