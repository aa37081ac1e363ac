from __future__ import annotations

from vjp_migrate.cli import main

main()
