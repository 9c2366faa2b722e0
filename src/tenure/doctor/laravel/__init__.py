"""`tenure doctor --laravel PATH`: the same four clocks, read from a Laravel project.

Kept free of imports: tenure.doctor.rules reads the rule index from laravel/index.py.
"""
