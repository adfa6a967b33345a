-- The extension installs, uninstalls and reinstalls; its objects and version.
DROP EXTENSION gputopk;
CREATE EXTENSION gputopk;
-- its objects, as \dx+ lists them (18 lists a view's row type too)
SELECT pg_describe_object(classid, objid, 0) AS object
  FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'gputopk')
   AND NOT EXISTS (SELECT FROM pg_type t LEFT JOIN pg_type e ON e.oid = t.typelem
                    WHERE t.oid = objid AND classid = 'pg_type'::regclass
                      AND (t.typrelid <> 0 OR e.typrelid <> 0))
 ORDER BY 1;
SELECT extversion FROM pg_extension WHERE extname = 'gputopk';
-- gputopk_version() names the same version as the catalog
SELECT gputopk_version() LIKE 'gputopk ' || extversion || ' (%)' AS version_matches
  FROM pg_extension WHERE extname = 'gputopk';
