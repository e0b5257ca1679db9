-- Liens of a second kind (ports/src/billing/liens.rs): besides write-offs a dispute's release
-- pays back, what a payment's open disputes could not freeze while another payment's dispute
-- held credits frozen, which that dispute's release freezes again (kind `dispute_freeze`, a
-- receipt in the payment's own books). The table is renamed for what it holds now.
--
-- An older instance would pay a re-freeze lien back as a recovery (taking the credits instead
-- of freezing them): renamed, the table is not there for it, its payment events fail and the
-- provider delivers them again to a newer instance. Stop older instances first all the same.
ALTER TABLE write_off_liens RENAME TO dispute_liens;
