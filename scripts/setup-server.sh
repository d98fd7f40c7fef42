#!/usr/bin/env bash
# Makes sure a MariaDB/MySQL server binary is available for the throwaway test/demo server.
# Installs Debian's mariadb-server when neither mariadbd nor mysqld can be found.
set -euo pipefail
have_server() {
  command -v mariadbd >/dev/null 2>&1 || command -v mysqld >/dev/null 2>&1 ||
    [ -x /usr/sbin/mariadbd ] || [ -x /usr/sbin/mysqld ]
}
if have_server; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "myrecode: no mariadbd/mysqld found and no apt-get here. Install MariaDB or MySQL server, start Docker, or set MYSQL_TEST_URL." >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
echo "myrecode: installing mariadb-server from the OS packages (for the throwaway test server)..." >&2
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server >/dev/null
have_server || { echo "myrecode: mariadb-server installed but mariadbd not found" >&2; exit 1; }
