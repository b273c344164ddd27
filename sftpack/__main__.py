import sys

from sftpack.cli import main

sys.exit(main())
