"""What the command-line recipes share: their absl flags (`recipe_flags`).

The top floor of the package: it may import anything below, and nothing
in the package imports it (recipes and users' own scripts do).
"""
