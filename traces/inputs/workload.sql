-- SQLite workload for the bundled trace traces/sqlite3.log.zst (traces/record.sh runs the
-- sqlite3 shell on a new file database with this script): a small order database built,
-- indexed, queried, full-text searched, updated and vacuumed. Deterministic.
PRAGMA journal_mode = WAL;
PRAGMA cache_size = -4000;
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT, joined TEXT);
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL, tags TEXT);
CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER REFERENCES customers(id),
  product INTEGER REFERENCES products(id), qty INTEGER, placed TEXT);
CREATE VIRTUAL TABLE notes USING fts5(body);

BEGIN;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 4000)
INSERT INTO customers SELECT i, printf('customer %05d', i), 'city' || (i * 37 % 113),
  date('2020-01-01', '+' || (i * 7 % 1400) || ' days') FROM c;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 500)
INSERT INTO products SELECT i, 'product ' || hex(i * 2654435761 % 4294967296),
  (i * 7919 % 10000) / 100.0, json_array('t' || (i % 11), 't' || (i % 7)) FROM c;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 30000)
INSERT INTO orders SELECT i, 1 + i * 7 % 4000, 1 + i * 13 % 500, 1 + i % 9,
  datetime('2023-01-01', '+' || (i * 97 % 525600) || ' minutes') FROM c;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3000)
INSERT INTO notes SELECT 'order ' || i || ' ' || substr('fragile urgent gift return express bulk sample', 1 + i % 30, 20) FROM c;
COMMIT;

CREATE INDEX orders_customer ON orders(customer, placed);
CREATE INDEX orders_product ON orders(product);

SELECT c.city, count(*) AS n, round(sum(o.qty * p.price), 2) AS revenue
  FROM orders o JOIN customers c ON c.id = o.customer JOIN products p ON p.id = o.product
  GROUP BY c.city ORDER BY revenue DESC LIMIT 5;
SELECT p.name, sum(o.qty) AS sold, rank() OVER (ORDER BY sum(o.qty) DESC) AS r
  FROM orders o JOIN products p ON p.id = o.product GROUP BY p.id ORDER BY r LIMIT 5;
SELECT strftime('%Y-%m', placed) AS month, count(*), round(avg(qty), 3)
  FROM orders GROUP BY month ORDER BY month;
SELECT customer, placed, qty, sum(qty) OVER (PARTITION BY customer ORDER BY placed
  ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS rolling FROM orders WHERE customer < 4 ORDER BY customer, placed;
SELECT json_group_object(t.value, cnt) FROM (SELECT j.value, count(*) AS cnt
  FROM products, json_each(products.tags) AS j GROUP BY j.value) AS t;
SELECT count(*) FROM notes WHERE notes MATCH 'urgent OR gift';
SELECT rowid, snippet(notes, 0, '[', ']', '...', 4) FROM notes WHERE notes MATCH 'express' ORDER BY rowid LIMIT 3;
WITH RECURSIVE spend(customer, total) AS (
  SELECT customer, sum(qty) FROM orders GROUP BY customer)
SELECT count(*), max(total), min(total) FROM spend WHERE total > 20;

BEGIN;
UPDATE products SET price = round(price * 1.05, 2) WHERE id % 3 = 0;
DELETE FROM orders WHERE id % 11 = 0;
UPDATE customers SET name = upper(name) WHERE id IN (SELECT customer FROM orders GROUP BY customer HAVING count(*) > 9);
INSERT INTO orders (customer, product, qty, placed)
  SELECT customer, product, qty + 1, datetime(placed, '+1 year') FROM orders WHERE id % 5 = 0;
COMMIT;
SELECT count(*), sum(qty) FROM orders;
ANALYZE;
VACUUM;
PRAGMA integrity_check;
