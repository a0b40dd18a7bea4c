<?php
// GET /write[?id=ID]: INSERT one row with a unique id and COMMIT; 200 (with the id) only after
// the COMMIT returned, so every 200 is an acknowledged write.
declare(strict_types=1);
require __DIR__ . '/common.php';

$id = cb_write_id();
cb_page(function (mysqli $link) use ($id): array {
    cb_write($link, $id);
    return ['page' => 'write', 'id' => $id];
});
