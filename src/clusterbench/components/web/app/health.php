<?php
// GET /health: 200 when the application reaches the database through its configured address
// with its account (and the server answers SELECT 1), else 503. The front balancer checks each web
// node with it. It selects no schema: the web tier is healthy before the load's prepare makes one.
declare(strict_types=1);
require __DIR__ . '/common.php';

cb_page(function (mysqli $link): array {
    $link->query('SELECT 1')->free();
    return ['page' => 'health'];
}, false);
