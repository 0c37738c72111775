-- A deterministic SQLite workload for the preload tests: a file database, a recursive CTE,
-- indexes, joins, window and JSON functions, VACUUM; its output must match a run on glibc.
PRAGMA journal_mode = WAL;
CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, city INTEGER, score REAL);
CREATE TABLE cities (id INTEGER PRIMARY KEY, name TEXT);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 40000)
INSERT INTO people (name, city, score) SELECT printf('person%05d', i), i % 97, (i * 7919 % 10007) / 10.0 FROM c;
WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 96)
INSERT INTO cities SELECT i, 'city' || i FROM c;
CREATE INDEX people_city ON people(city, score);
SELECT count(*), round(sum(score), 2), min(name), max(name) FROM people;
SELECT c.name, count(*), round(avg(p.score), 3) FROM people p JOIN cities c ON c.id = p.city
  GROUP BY c.id ORDER BY count(*) DESC, c.name LIMIT 5;
SELECT name, score, rank() OVER (PARTITION BY city ORDER BY score DESC, name) AS r FROM people
  WHERE city = 42 ORDER BY r, name LIMIT 5;
SELECT json_group_array(json_object('id', id, 'name', name)) FROM (SELECT * FROM people ORDER BY id LIMIT 3);
UPDATE people SET name = upper(name) || hex(randomblob(0)) WHERE id % 5 = 0;
DELETE FROM people WHERE id % 7 = 0;
SELECT count(*), sum(length(name)), group_concat(substr(name, 1, 3), '') IS NOT NULL FROM people;
SELECT total_changes();
VACUUM;
PRAGMA integrity_check;
SELECT printf('%.3f', sum(score)) FROM people WHERE name LIKE 'PERSON%';
