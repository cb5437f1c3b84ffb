"""The method groups of ``TensorDictBase`` the base layer only declares: one-line
forwarders to the implementations the layers above bind into ``_provided.py`` (see
../README.md)."""
