"""`python -m hirfuzz.report`: kept as the command users know; the code is campaign/report.py."""
import sys

from .campaign.report import main

if __name__ == "__main__":
    sys.exit(main())
