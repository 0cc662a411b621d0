/** The `funcpipe` command as npm installs it: the launcher, which starts the bundle (kept current by `FreshBundle`). */
import { fileURLToPath } from "node:url"

export const launcher = fileURLToPath(new URL("../../bin/funcpipe.mjs", import.meta.url))
