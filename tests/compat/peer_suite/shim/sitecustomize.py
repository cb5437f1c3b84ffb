"""Installs the tensordict -> tclass shim in every interpreter of a peer-suite run
(pytest, its xdist workers, the processes the peer's tests spawn) when TCLASS_PEER_SHIM=1."""

import os

if os.environ.get("TCLASS_PEER_SHIM") == "1":
    import peer_shim

    peer_shim.install()
