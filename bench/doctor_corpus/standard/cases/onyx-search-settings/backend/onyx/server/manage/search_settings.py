from fastapi import APIRouter, Depends, HTTPException, status
from sqlalchemy.orm import Session

from onyx.auth.permissions import require_permission
from onyx.configs.app_configs import DISABLE_INDEX_UPDATE_ON_SWAP
from onyx.context.search.models import SavedSearchSettings, SearchSettingsCreationRequest
from onyx.db.connector_credential_pair import (
    get_connector_credential_pairs,
    get_last_successful_attempt_poll_range_end,
    resync_cc_pair,
)
from onyx.db.engine.sql_engine import get_session
from onyx.db.enums import Permission
from onyx.db.index_attempt import create_synthetic_seed_attempt, expire_index_attempts
from onyx.db.models import User
from onyx.db.search_settings import (
    create_search_settings,
    delete_search_settings,
    get_current_search_settings,
)
from onyx.server.manage.embedding.models import SearchSettingsDeleteRequest
from onyx.server.models import IdReturn

router = APIRouter(prefix="/search-settings")


@router.post("/set-new-search-settings")
def set_new_search_settings(
    search_settings_new: SearchSettingsCreationRequest,
    _: User = Depends(require_permission(Permission.FULL_ADMIN_PANEL_ACCESS)),
    db_session: Session = Depends(get_session),
) -> IdReturn:
    """Creates a new SearchSettings row and seeds a poll cursor for every connector pair."""
    search_settings = get_current_search_settings(db_session)
    new_search_settings = create_search_settings(
        search_settings=search_settings_new, db_session=db_session, commit=False
    )

    if DISABLE_INDEX_UPDATE_ON_SWAP:
        expire_index_attempts(
            search_settings_id=search_settings.id, db_session=db_session, commit=False
        )
        for cc_pair in get_connector_credential_pairs(db_session):
            resync_cc_pair(
                cc_pair=cc_pair,
                search_settings_id=new_search_settings.id,
                db_session=db_session,
                commit=False,
            )

    for cc_pair in get_connector_credential_pairs(db_session):
        indexing_start = cc_pair.connector.indexing_start
        earliest_index = indexing_start.timestamp() if indexing_start else 0.0
        poll_range_end = get_last_successful_attempt_poll_range_end(
            cc_pair.id, earliest_index, search_settings, db_session
        )
        create_synthetic_seed_attempt(
            connector_credential_pair_id=cc_pair.id,
            search_settings_id=new_search_settings.id,
            db_session=db_session,
            poll_range_end=poll_range_end,
        )

    db_session.commit()
    return IdReturn(id=new_search_settings.id)


@router.delete("/delete-search-settings")
def delete_search_settings_endpoint(
    deletion_request: SearchSettingsDeleteRequest,
    _: User = Depends(require_permission(Permission.FULL_ADMIN_PANEL_ACCESS)),
    db_session: Session = Depends(get_session),
) -> None:
    try:
        delete_search_settings(
            db_session=db_session, search_settings_id=deletion_request.search_settings_id
        )
    except ValueError as e:
        raise HTTPException(status_code=status.HTTP_400_BAD_REQUEST, detail=str(e))


@router.get("/get-current-search-settings")
def get_current_search_settings_endpoint(
    _: User = Depends(require_permission(Permission.BASIC_ACCESS)),
    db_session: Session = Depends(get_session),
) -> SavedSearchSettings:
    current_search_settings = get_current_search_settings(db_session)
    return SavedSearchSettings.from_db_model(current_search_settings)
