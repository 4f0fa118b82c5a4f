"""Storage: the store interface and its SQLite and PostgreSQL backends, schema migrations, the
group commit that batches concurrent reports into one transaction, the per-process pool of
stores, tally recounts and purges, and the SQLite-to-PostgreSQL copy. No Flask and no statistics
here (tests/test_layers.py): lending stores to requests is web/db.py's.

Everything that knows SQL lives here; the rest of the aggregator sees only `Store`.
"""

from deniable.aggregator.store.base import (
    PURGED_BODY,
    Account,
    AuditEntry,
    BodyCounter,
    EnrollOutcome,
    Grant,
    LastOwnerError,
    NewReport,
    Recount,
    Role,
    Store,
    StoredReport,
    StoreError,
    StoreOutcome,
    SurveyRecord,
    TokenRecord,
    open_store,
    resend_outcome,
)

__all__ = [
    "PURGED_BODY",
    "Account",
    "AuditEntry",
    "Grant",
    "LastOwnerError",
    "Role",
    "TokenRecord",
    "EnrollOutcome",
    "BodyCounter",
    "NewReport",
    "Recount",
    "Store",
    "StoreError",
    "StoreOutcome",
    "StoredReport",
    "SurveyRecord",
    "open_store",
    "resend_outcome",
]
