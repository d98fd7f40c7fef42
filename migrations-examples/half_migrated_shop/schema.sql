-- A shop half-migrated by `ALTER TABLE ... CONVERT TO CHARACTER SET utf8mb4` of columns
-- that were declared latin1 but held cp1251 (now mojibake such as "×àéíèê"), plus rows
-- written by a UTF-8 client through a latin1 connection (double-encoded UTF-8),
-- ASCII SKUs, and product images kept in a BLOB.
CREATE TABLE products (
  id INT NOT NULL PRIMARY KEY,
  sku CHAR(8) CHARACTER SET latin1 NOT NULL,
  title VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL,
  image MEDIUMBLOB,
  UNIQUE KEY u_sku (sku)
) ENGINE=InnoDB;
