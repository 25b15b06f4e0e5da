"""`python -m hirfuzz.replay`: kept as the command users know; the code is campaign/replay.py."""
import sys

from .campaign.replay import main

if __name__ == "__main__":
    sys.exit(main())
