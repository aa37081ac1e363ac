"""A small sample project with old-style custom_vjp functions, for ``vjp-migrate record``."""
