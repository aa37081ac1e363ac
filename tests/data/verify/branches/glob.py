"""A module named like the standard library's glob, which JAX imports."""
