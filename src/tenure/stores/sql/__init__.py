"""What the SQL stores (SQLite, PostgreSQL) share, written once."""
