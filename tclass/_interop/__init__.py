"""Interop: constructors, numpy and pytree bridges, state dicts, ``nn.Module`` interop
and the repr parser, built on the engine."""
