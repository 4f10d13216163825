"""Test fakes: stand-ins for libraries that need hardware absent here."""
