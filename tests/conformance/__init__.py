"""The conformance matrix: every public method of the collection API on every kind of
collection a user can hold, each result checked against the kind's dense TensorDict
equivalent and, when it is installed, the peer (tensordict). See README.md."""
