<?php
// GET /read[?id=N | ?rows=R]: one point select from the read table.
declare(strict_types=1);
require __DIR__ . '/common.php';

$id = cb_item_id();
cb_page(fn (mysqli $link): array => ['page' => 'read', 'row' => cb_read($link, $id)]);
