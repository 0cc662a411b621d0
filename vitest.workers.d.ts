/**
 * Test files run at once, in every project: two even on two cores (vitest's default leaves one core free, and a
 * project's files then share one worker in turn), since most files wait on child processes, SQLite or PostgreSQL
 * much of the time. Each project's config sets it: a project's own config file does not inherit the root's.
 */
export declare const maxWorkers: number
