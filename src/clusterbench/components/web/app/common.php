<?php
// clusterbench's web application: what every page shares. Each page answers one line of JSON and
// 200 only when the database did what the page says (a write: after its COMMIT returned). Its
// settings (the database's address, account and password) come from the file named by the
// pool's CB_WEB_CONFIG, written by clusterbench with mode 0600; never from the request.
declare(strict_types=1);

const CB_ITEMS = 'cbweb_items';
const CB_WRITES = 'cbweb_writes';
const CB_ID = '/^[A-Za-z0-9._-]{1,64}$/';
// Errors after which the same request may well succeed again (the node is not ready or went
// away, a conflict or a lock wait): 503. Anything else: 500.
const CB_RETRYABLE = [1047, 1053, 1180, 1205, 1213, 1290, 1927, 2002, 2003, 2006, 2013, 2055, 3101];

function cb_answer(int $code, array $body): never
{
    http_response_code($code);
    header('Content-Type: application/json');
    header('Cache-Control: no-store');
    echo json_encode($body, JSON_UNESCAPED_SLASHES), "\n";
    exit;
}

function cb_config(): array
{
    static $cfg = null;
    if ($cfg === null) {
        $path = getenv('CB_WEB_CONFIG');
        $text = is_string($path) && $path !== '' ? @file_get_contents($path) : false;
        $cfg = $text === false ? null : json_decode($text, true);
        if (!is_array($cfg) || !is_array($cfg['db'] ?? null)) {
            cb_answer(500, ['ok' => false, 'error' => 'config', 'message' => 'CB_WEB_CONFIG is missing or unreadable']);
        }
    }
    return $cfg;
}

function cb_node(): string
{
    return (string)(cb_config()['node'] ?? 'web');
}

// $schema: select the application's schema (every page); false: only reach the server (/health,
// which must not depend on a schema that the load's prepare creates later).
function cb_connect(bool $schema = true): mysqli
{
    $db = cb_config()['db'];
    mysqli_report(MYSQLI_REPORT_ERROR | MYSQLI_REPORT_STRICT);
    $link = mysqli_init();
    $link->options(MYSQLI_OPT_CONNECT_TIMEOUT, (int)$db['connect_timeout']);
    $link->options(MYSQLI_OPT_READ_TIMEOUT, (int)$db['timeout']);
    $host = ($db['persistent'] ? 'p:' : '') . $db['host'];
    $link->real_connect($host, $db['user'], $db['password'], $schema ? $db['schema'] : '', (int)$db['port']);
    return $link;
}

function cb_failed(string $what, mysqli_sql_exception $e): never
{
    $errno = $e->getCode();
    $code = $what === 'connect' || in_array($errno, CB_RETRYABLE, true) ? 503 : 500;
    if ($errno === 1062) {
        $code = 409;  // the write's id is taken: the client sent an id twice
    }
    cb_answer($code, ['ok' => false, 'error' => $what, 'errno' => $errno, 'message' => $e->getMessage(),
                      'node' => cb_node()]);
}

// Runs $work($link) on a fresh connection and answers 200 with what it returns, or 5xx.
function cb_page(callable $work, bool $schema = true): never
{
    try {
        $link = cb_connect($schema);
    } catch (mysqli_sql_exception $e) {
        cb_failed('connect', $e);
    }
    try {
        $body = $work($link);
    } catch (mysqli_sql_exception $e) {
        // A persistent connection goes back to the pool as it is: never with a transaction open.
        try {
            $link->rollback();
        } catch (Throwable) {
        }
        cb_failed('query', $e);
    }
    cb_answer(200, $body + ['ok' => true, 'node' => cb_node()]);
}

// The read table's size as the request says (?rows=R, default 1000): ids are drawn from 1..R.
function cb_rows(): int
{
    $rows = filter_var($_GET['rows'] ?? '1000', FILTER_VALIDATE_INT, ['options' => ['min_range' => 1]]);
    if ($rows === false) {
        cb_answer(400, ['ok' => false, 'error' => 'rows', 'message' => 'rows must be a whole number from 1']);
    }
    return $rows;
}

// The row /read selects: ?id=N, else a random one of 1..cb_rows().
function cb_item_id(): int
{
    if (!isset($_GET['id'])) {
        return random_int(1, cb_rows());
    }
    $id = filter_var($_GET['id'], FILTER_VALIDATE_INT, ['options' => ['min_range' => 1]]);
    if ($id === false) {
        cb_answer(400, ['ok' => false, 'error' => 'id', 'message' => 'id must be a whole number from 1']);
    }
    return $id;
}

function cb_read(mysqli $link, int $id): array
{
    $st = $link->prepare('SELECT id, k, v FROM ' . CB_ITEMS . ' WHERE id = ?');
    $st->bind_param('i', $id);
    $st->execute();
    $row = $st->get_result()->fetch_assoc();
    $st->close();
    if ($row === null) {
        cb_answer(404, ['ok' => false, 'error' => 'not found', 'id' => $id, 'node' => cb_node()]);
    }
    return $row;
}

// The id a write stores: ?id=..., else the load generator's attack name and sequence number
// (vegeta sends X-Vegeta-Attack and X-Vegeta-Seq), else one made up here.
function cb_write_id(): string
{
    if (isset($_GET['id'])) {
        $id = $_GET['id'];
        if (!is_string($id) || !preg_match(CB_ID, $id)) {
            cb_answer(400, ['ok' => false, 'error' => 'id', 'message' => 'id must be 1-64 of A-Z a-z 0-9 . _ -']);
        }
        return $id;
    }
    $attack = $_SERVER['HTTP_X_VEGETA_ATTACK'] ?? '';
    $seq = $_SERVER['HTTP_X_VEGETA_SEQ'] ?? '';
    if (preg_match('/^[A-Za-z0-9._-]{1,40}$/', $attack) && preg_match('/^[0-9]{1,20}$/', $seq)) {
        return $attack . '-' . $seq;
    }
    return cb_node() . '-' . bin2hex(random_bytes(8));
}

// INSERT the row in a transaction of its own; returns only once COMMIT succeeded.
function cb_write(mysqli $link, string $id): void
{
    $node = cb_node();
    $payload = bin2hex(random_bytes(16));
    $link->begin_transaction();
    $st = $link->prepare('INSERT INTO ' . CB_WRITES . ' (id, node, payload) VALUES (?, ?, ?)');
    $st->bind_param('sss', $id, $node, $payload);
    $st->execute();
    $st->close();
    if (!$link->commit()) {
        throw new mysqli_sql_exception('COMMIT failed: ' . $link->error, $link->errno);
    }
}
