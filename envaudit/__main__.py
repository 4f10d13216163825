"""`python -m envaudit` is the same program as the `envaudit` console script."""

from envaudit.cli import main_entry

if __name__ == "__main__":
    main_entry()
