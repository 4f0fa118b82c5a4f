"""XLSForm in and out (docs/xlsform.md): an ODK spreadsheet read, bounded and checked as ODK
reads it (pyxform), turned into a survey document, and a survey written back as a workbook.

`read_xlsform(data, filename=..., drop_unsupported=...)` gives the survey document (a dict,
validated by `Survey.from_dict`) and the notices of what the import left out or changed; its
XLSFormError carries every problem, one line each naming the sheet, row and column
(`import_xlsform` gives the document alone); `export_xlsform(survey)` gives the workbook's
bytes. No Flask and no store here: the CLI (`deniable-aggregator survey`) and the
dashboard's new-survey page call these and create the survey through `surveys.create_survey`.
"""

from deniable.aggregator.forms.exporting import export_xlsform
from deniable.aggregator.forms.importing import ImportedForm, import_xlsform, read_xlsform
from deniable.aggregator.forms.workbook import (
    MAX_CHOICE_ROWS,
    MAX_COLUMNS,
    MAX_FORM_BYTES,
    MAX_MEMBERS,
    MAX_SURVEY_ROWS,
    MAX_UNPACKED_BYTES,
    XLSFormError,
)

__all__ = [
    "MAX_CHOICE_ROWS",
    "MAX_COLUMNS",
    "MAX_FORM_BYTES",
    "MAX_MEMBERS",
    "MAX_SURVEY_ROWS",
    "MAX_UNPACKED_BYTES",
    "ImportedForm",
    "XLSFormError",
    "export_xlsform",
    "import_xlsform",
    "read_xlsform",
]
