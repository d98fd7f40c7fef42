-- A Russian forum that grew up on latin1: every text column is declared latin1,
-- while the bytes inside are whatever the client sent (cp1251 from Windows,
-- KOI8-R from the mail gateway, CP866 from DOS imports, ISO-8859-5 from one old Unix tool).
CREATE TABLE users (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  login VARCHAR(64) CHARACTER SET latin1 NOT NULL,
  display_name VARCHAR(255) CHARACTER SET latin1,
  signature TEXT CHARACTER SET latin1,
  api_token CHAR(32) CHARACTER SET latin1,
  UNIQUE KEY u_login (login),
  KEY idx_display_name (display_name)
) ENGINE=InnoDB ROW_FORMAT=DYNAMIC DEFAULT CHARSET=latin1;

CREATE TABLE comments (
  topic_id INT NOT NULL,
  seq INT NOT NULL,
  user_id INT NOT NULL,
  body TEXT CHARACTER SET latin1,
  source VARCHAR(16) CHARACTER SET latin1 NOT NULL,
  PRIMARY KEY (topic_id, seq),
  KEY idx_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=latin1;

CREATE TABLE visit_log (
  at DATETIME NOT NULL,
  page VARCHAR(200) CHARACTER SET latin1
) ENGINE=InnoDB DEFAULT CHARSET=latin1;
