/** The PostgreSQL index store, an entry point of its own: it loads the PostgreSQL driver, which a SQLite user never needs. */
export * from "./store/postgres/PgIndexStore.ts"
export * from "./store/postgres/PgUrl.ts"
