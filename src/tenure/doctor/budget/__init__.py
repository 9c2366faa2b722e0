"""The time-budget standard's code rules ("Queues and Time Budget"): where heavy work runs, how
big work is split, who dispatches, how progress is counted.

Readers (python_reader for `ast`, php_reader for tree-sitter) build one small model of the code
(model.py); check.py applies every rule to it once; index.py lists the rules."""
