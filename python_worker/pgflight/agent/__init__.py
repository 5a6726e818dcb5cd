"""
The agent as a step type: the ``agent`` recipe (:mod:`.loop`), tools (:mod:`.tools`) and model
providers (:mod:`.providers`: ``anthropic``, ``offline``, ``scripted``).
"""
