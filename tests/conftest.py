import sys
from pathlib import Path

# Tests import the project as the program does: from the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
