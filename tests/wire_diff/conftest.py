"""The differential harness is a top-level package beside kwire (python -m differential), not part of
the installed distribution: make the repository root importable for these tests whatever the
worker's sys.path."""
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
