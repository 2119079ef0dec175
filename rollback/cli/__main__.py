"""`python -m rollback.cli`: the `mysql-rollback` command."""

import sys

from rollback.cli.commands import main

sys.exit(main())
