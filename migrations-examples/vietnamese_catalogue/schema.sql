-- A Vietnamese shop's catalogue from the years of VN3 fonts (.VnTime): the pages were in
-- TCVN3, so product names, descriptions, category names and store addresses are TCVN3
-- bytes stored through a latin1 connection into latin1 columns (MySQL has no TCVN3
-- charset). Products added after the admin pages moved to UTF-8 hold UTF-8 bytes in the
-- same columns; SKUs, URL slugs and phone numbers are ASCII. Tables are named in
-- Vietnamese as the site had them: danh_muc (categories), san_pham (products),
-- cua_hang (stores).
CREATE TABLE danh_muc (
  id INT NOT NULL PRIMARY KEY,
  code CHAR(2) CHARACTER SET latin1 NOT NULL,
  name VARCHAR(100) CHARACTER SET latin1 NOT NULL,
  UNIQUE KEY u_code (code)
) ENGINE=InnoDB ROW_FORMAT=DYNAMIC DEFAULT CHARSET=latin1;

CREATE TABLE san_pham (
  id INT NOT NULL PRIMARY KEY,
  sku VARCHAR(16) CHARACTER SET latin1 NOT NULL,
  category_id INT NOT NULL,
  name VARCHAR(200) CHARACTER SET latin1 NOT NULL,
  slug VARCHAR(200) CHARACTER SET latin1 NOT NULL,
  description TEXT CHARACTER SET latin1,
  price_vnd INT UNSIGNED NOT NULL,
  UNIQUE KEY u_sku (sku),
  KEY idx_category (category_id),
  KEY idx_name (name)
) ENGINE=InnoDB ROW_FORMAT=DYNAMIC DEFAULT CHARSET=latin1;

CREATE TABLE cua_hang (
  id INT NOT NULL PRIMARY KEY,
  city VARCHAR(64) CHARACTER SET latin1 NOT NULL,
  address VARCHAR(255) CHARACTER SET latin1 NOT NULL,
  phone VARCHAR(20) CHARACTER SET latin1
) ENGINE=InnoDB ROW_FORMAT=DYNAMIC DEFAULT CHARSET=latin1;
