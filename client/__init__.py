"""The respondent side: keys, ledger and outbox, HTTP calls and the `deniable` CLI."""
