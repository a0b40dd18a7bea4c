<?php
// GET /mixed[?rows=R][&id=ID]: the settings' mixed_reads point selects, then one write (as
// /write: 200 only after its COMMIT).
declare(strict_types=1);
require __DIR__ . '/common.php';

$reads = (int)(cb_config()['mixed_reads'] ?? 4);
$rows = cb_rows();
$ids = [];
for ($i = 0; $i < $reads; $i++) {
    $ids[] = random_int(1, $rows);
}
$id = cb_write_id();
cb_page(function (mysqli $link) use ($ids, $id): array {
    foreach ($ids as $item) {
        cb_read($link, $item);
    }
    cb_write($link, $id);
    return ['page' => 'mixed', 'reads' => count($ids), 'id' => $id];
});
