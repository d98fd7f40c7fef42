<?php
// The legacy PHP application of the switch's tests, unchanged through the migration: it
// answers one request per line of standard input with one line on standard output.
//
//   php app.php API CHARSET CONNECTION
//     API         mysqli | pdo
//     CHARSET     none (the common legacy setup: no charset set, the server's default
//                 handshake, latin1) | utf8mb4 (new code: set_charset / charset= in the DSN)
//                 | latin1 (an application that sends SET NAMES latin1 itself)
//                 | cp1251 (one that sends SET NAMES cp1251: tables declared cp1251)
//     CONNECTION  fresh (a connection per request, as PHP-FPM without persistence) | keep
//                 (one connection for every request: a session opened before the swap)
//   The server: APP_HOST, APP_PORT, APP_USER, APP_PASSWORD, APP_DB.
//
// Requests (bytes travel hex-encoded, so the test sees exactly what PHP sent and got):
//   page N           the 10 posts of page N (id order): hex of "id\ttitle\tbody\n" per row
//   find HEX         how many posts have this title
//   add HEX HEX      inserts a post (title, body) as the application does (escaped string
//                    concatenation); "ok ID"
//   set ID HEX       updates a post's title; "ok ROWS"
//   get ID           hex of a post's title
//   charset          the session's character_set_client and character_set_results
// A failed request answers "error CODE MESSAGE" and the application goes on.

[$_, $api, $charset, $connection] = $argv;
mysqli_report(MYSQLI_REPORT_ERROR | MYSQLI_REPORT_STRICT);

function connect($api, $charset)
{
    $host = getenv('APP_HOST');
    $port = (int) getenv('APP_PORT');
    $user = getenv('APP_USER');
    $pass = getenv('APP_PASSWORD');
    $db = getenv('APP_DB');
    if ($api === 'mysqli') {
        $m = new mysqli($host, $user, $pass, $db, $port);
        if ($charset === 'utf8mb4') {
            $m->set_charset('utf8mb4');
        } elseif ($charset === 'latin1' || $charset === 'cp1251') {
            $m->query("SET NAMES $charset");
        }
        return $m;
    }
    $dsn = "mysql:host=$host;port=$port;dbname=$db" . ($charset === 'utf8mb4' ? ';charset=utf8mb4' : '');
    $p = new PDO($dsn, $user, $pass, [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
    if ($charset === 'latin1' || $charset === 'cp1251') {
        $p->exec("SET NAMES $charset");
    }
    return $p;
}

function rows($db, $sql)
{
    if ($db instanceof mysqli) {
        return $db->query($sql)->fetch_all(MYSQLI_NUM);
    }
    return $db->query($sql)->fetchAll(PDO::FETCH_NUM);
}

function exec_sql($db, $sql)
{
    if ($db instanceof mysqli) {
        $db->query($sql);
        return [$db->affected_rows, $db->insert_id];
    }
    $n = $db->exec($sql);
    return [$n, $db->lastInsertId()];
}

function quoted($db, $bytes)
{
    return $db instanceof mysqli ? "'" . $db->real_escape_string($bytes) . "'" : $db->quote($bytes);
}

function answer($db, $op, $args)
{
    switch ($op) {
        case 'page':
            $off = 10 * (int) $args[0];
            $out = '';
            foreach (rows($db, "SELECT id, title, body FROM posts ORDER BY id LIMIT 10 OFFSET $off") as $r) {
                $out .= implode("\t", $r) . "\n";
            }
            return bin2hex($out);
        case 'find':
            return rows($db, 'SELECT COUNT(*) FROM posts WHERE title = ' . quoted($db, hex2bin($args[0])))[0][0];
        case 'add':
            [$n, $id] = exec_sql($db, 'INSERT INTO posts (title, body) VALUES (' . quoted($db, hex2bin($args[0])) . ', ' . quoted($db, hex2bin($args[1] ?? '')) . ')');
            return "ok $id";
        case 'set':
            [$n, $_] = exec_sql($db, 'UPDATE posts SET title = ' . quoted($db, hex2bin($args[1])) . ' WHERE id = ' . (int) $args[0]);
            return "ok $n";
        case 'get':
            $r = rows($db, 'SELECT title FROM posts WHERE id = ' . (int) $args[0]);
            return $r ? bin2hex($r[0][0]) : 'none';
        case 'charset':
            return implode(' ', rows($db, 'SELECT @@character_set_client, @@character_set_results')[0]);
    }
    return "error 0 unknown request $op";
}

$db = null;
while (($line = fgets(STDIN)) !== false) {
    $parts = explode(' ', trim($line));
    $op = array_shift($parts);
    try {
        if ($db === null || $connection === 'fresh') {
            $db = null;
            $db = connect($api, $charset);
        }
        $out = answer($db, $op, $parts);
    } catch (Throwable $e) {
        $code = $e instanceof PDOException ? ($e->errorInfo[1] ?? $e->getCode()) : $e->getCode();
        $out = 'error ' . $code . ' ' . str_replace("\n", ' ', $e->getMessage());
        if ($connection === 'keep' && in_array((int) $code, [2006, 2013], true)) {
            $db = null;
        }
    }
    echo $out, "\n";
    fflush(STDOUT);
}
