-- Moves (an agent reincarnated on another broker) judge two things the
-- brokers report: each broker's workspace storage (local, or the NFS
-- share with the export identity marker it read through its mount), as
-- JSON, NULL for a broker that has never reported it; and where each
-- agent's workspace was when its broker last started it ('export' or
-- 'local'; '' unknown: not started since its broker began recording it).
ALTER TABLE runtime_brokers ADD COLUMN workspace_storage TEXT;
ALTER TABLE agents ADD COLUMN workspace_placement TEXT NOT NULL DEFAULT '';
