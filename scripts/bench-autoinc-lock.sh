#!/usr/bin/env bash
# Why a copy into a table with an AUTO_INCREMENT column cannot be split over cores: the
# server's floor for `INSERT … SELECT` in chunks (what pt-online-schema-change does, and what
# myrecode's copy does per batch), one stream against two, with and without AUTO_INCREMENT.
#
#   scripts/bench-autoinc-lock.sh SOCKET [ROWS]
#
# SOCKET: a throwaway MariaDB/MySQL server's socket, root without a password (it creates and
# drops the database `autoinc_bench`). Prints wall seconds and the server's CPU seconds for
# each case; with innodb_autoinc_lock_mode=1 (MariaDB's default) every `INSERT … SELECT`
# holds the table's AUTO-INC lock to its end, so two streams take as long as one.
set -euo pipefail
sock=${1:?usage: $0 SOCKET [ROWS]}
rows=${2:-1000000}
chunk=20000
db=autoinc_bench
sql() { mariadb -S "$sock" -uroot "$@"; }
pid=$(sql -N -e "SELECT @@pid_file" | xargs cat)
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
ticks=$(getconf CLK_TCK)

sql -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db"
sql "$db" <<SQL
SET NAMES utf8mb4;
CREATE TABLE words (i INT PRIMARY KEY, s VARCHAR(100) CHARACTER SET utf8mb4);
INSERT INTO words VALUES (0,'Привет всем, подскажите'),(1,'Москва, ул. Садовая'),(2,'Иванов Сергей Петрович'),
  (3,'Спасибо за быстрый ответ'),(4,'Доставка по Санкт-Петербургу'),(5,'Новосибирск, проспект'),
  (6,'Кузнецова Анна'),(7,'Не могу войти в кабинет'),(8,'Куплю велосипед недорого'),
  (9,'Екатеринбург, ул. Малышева'),(10,'Отличный магазин'),(11,'Модератор удалил тему'),
  (12,'Цена указана с учётом НДС'),(13,'Когда откроется станция'),(14,'Сильный ветер и дождь');
CREATE TABLE src (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  author VARCHAR(64) CHARACTER SET latin1, body TEXT CHARACTER SET latin1, created DATETIME,
  KEY k_author (author)) DEFAULT CHARSET=latin1;
INSERT INTO src SELECT s.seq, CAST(CONVERT(a.s USING cp1251) AS BINARY),
  CAST(CONVERT(CONCAT(b.s, '. ', c.s, ' #', s.seq) USING cp1251) AS BINARY), NOW()
  FROM seq_1_to_${rows} s JOIN words a ON a.i = s.seq % 15 JOIN words b ON b.i = (s.seq * 7) % 15
  JOIN words c ON c.i = (s.seq * 11 + 3) % 15;
SQL

# One chunked stream over ids (lo, hi] into table $1.
stream() {
  local t=$1 lo=$2 hi=$3
  for ((k = lo; k < hi; k += chunk)); do
    echo "INSERT INTO $t SELECT id, CONVERT(CAST(author AS BINARY) USING cp1251), CONVERT(CAST(body AS BINARY) USING cp1251), created FROM src WHERE id > $k AND id <= $((k + chunk > hi ? hi : k + chunk)) LOCK IN SHARE MODE;"
  done | sql "$db"
}

run() {
  local name=$1 auto=$2 streams=$3
  sql "$db" -e "DROP TABLE IF EXISTS dst; CREATE TABLE dst (id INT UNSIGNED NOT NULL $auto PRIMARY KEY,
    author VARCHAR(64) CHARACTER SET utf8mb4, body TEXT CHARACTER SET utf8mb4, created DATETIME,
    KEY k_author (author))"
  local c0 t0 t1 c1
  c0=$(cpu)
  t0=$(date +%s.%N)
  if [ "$streams" = 1 ]; then
    stream dst 0 "$rows"
  else
    stream dst 0 $((rows / 2)) &
    stream dst $((rows / 2)) "$rows"
    wait
  fi
  t1=$(date +%s.%N)
  c1=$(cpu)
  printf '%-44s wall %6.2f s   server CPU %6.2f s\n' "$name" "$(echo "$t1 - $t0" | bc)" "$(echo "($c1 - $c0) / $ticks" | bc -l)"
}

echo "INSERT … SELECT of $rows rows in chunks of $chunk (innodb_autoinc_lock_mode=$(sql -N -e 'SELECT @@innodb_autoinc_lock_mode'))"
run "AUTO_INCREMENT, one stream" AUTO_INCREMENT 1
run "AUTO_INCREMENT, two streams (halves)" AUTO_INCREMENT 2
run "no AUTO_INCREMENT, one stream" "" 1
run "no AUTO_INCREMENT, two streams (halves)" "" 2
sql -e "DROP DATABASE $db"
