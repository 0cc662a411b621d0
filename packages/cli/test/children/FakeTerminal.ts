/**
 * Preloaded (`node --import`) into a CLI process whose stderr is a pipe: makes it look like a terminal 60 columns
 * wide, so the progress bar is drawn and a test can wait for it.
 */
Object.defineProperty(process.stderr, "isTTY", { value: true })
Object.defineProperty(process.stderr, "columns", { value: 60 })
