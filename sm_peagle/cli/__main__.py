"""`python -m sm_peagle.cli` = `peagle` (for tests and environments without the script)."""

from .app import run

if __name__ == "__main__":
    run()
